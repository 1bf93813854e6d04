//! rand/randn: torch's sequences for a seed, per-call generators, dtype errors.

use ratten_aten::random::{manual_seed, Generator, DEFAULT_RNG_SEED};
use ratten_aten::Tensor;
use ratten_core::{Device, ErrorKind, ScalarType};

fn shown(t: &Tensor) -> Vec<String> {
    t.to_vec::<f32>()
        .unwrap()
        .iter()
        .map(|v| format!("{v:.4}"))
        .collect()
}

#[test]
fn default_generator_reproduces_torch() {
    // The only test here that touches the process-wide generator (tests run in parallel).
    manual_seed(0);
    assert_eq!(
        Tensor::rand(&[3], ScalarType::Float).unwrap().to_string(),
        "tensor([0.4963, 0.7682, 0.0885])"
    );
    manual_seed(0);
    assert_eq!(
        Tensor::rand(&[2, 3], ScalarType::Float)
            .unwrap()
            .to_string(),
        "tensor([[0.4963, 0.7682, 0.0885],\n        [0.1320, 0.3074, 0.6341]])"
    );
    manual_seed(0);
    assert_eq!(
        Tensor::randn(&[3], ScalarType::Float).unwrap().to_string(),
        "tensor([ 1.5410, -0.2934, -2.1788])"
    );
    assert_eq!(ratten_aten::random::initial_seed(), 0);
}

#[test]
fn randn_uses_normal_fill_from_16_elements() {
    // torch.manual_seed(0); torch.randn(4, 4)
    let g = Generator::with_seed(0);
    let t = Tensor::randn_with(&[4, 4], ScalarType::Float, Some(&g)).unwrap();
    assert_eq!(
        t.to_string(),
        "tensor([[-1.1258, -1.1524, -0.2506, -0.4339],\n        \
                 [ 0.8487,  0.6920, -0.3160, -2.1152],\n        \
                 [ 0.3223, -1.2633,  0.3500,  0.3081],\n        \
                 [ 0.1198,  1.2377,  1.1168, -0.2473]])"
    );
    // 17 elements: the last 16 are redrawn, element 0 stays the first Box-Muller value
    g.manual_seed(0);
    let t17 = Tensor::randn_with(&[17], ScalarType::Float, Some(&g)).unwrap();
    assert_eq!(shown(&t17)[0], "-1.1258");
    assert_ne!(shown(&t17)[1], "-1.1524");
}

#[test]
fn generators_are_independent_and_reseedable() {
    let a = Generator::with_seed(42);
    let b = Generator::with_seed(42);
    let x = Tensor::rand_with(&[100], ScalarType::Float, Some(&a)).unwrap();
    let y = Tensor::rand_with(&[100], ScalarType::Float, Some(&b)).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), y.to_vec::<f32>().unwrap());
    let z = Tensor::rand_with(&[100], ScalarType::Float, Some(&a)).unwrap();
    assert_ne!(x.to_vec::<f32>().unwrap(), z.to_vec::<f32>().unwrap());
    a.manual_seed(42);
    let w = Tensor::rand_with(&[100], ScalarType::Float, Some(&a)).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), w.to_vec::<f32>().unwrap());
    assert!(x
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .all(|v| (0.0..1.0).contains(v)));
    // a clone of a generator shares its state
    let c = a.clone();
    c.manual_seed(7);
    assert_eq!(a.initial_seed(), 7);
    assert_eq!(Generator::new().initial_seed(), DEFAULT_RNG_SEED);
}

#[test]
fn every_float_dtype_and_complex() {
    let g = Generator::with_seed(1);
    for dtype in [
        ScalarType::Half,
        ScalarType::BFloat16,
        ScalarType::Float,
        ScalarType::Double,
    ] {
        let u = Tensor::rand_with(&[64], dtype, Some(&g)).unwrap();
        let n = Tensor::randn_with(&[64], dtype, Some(&g)).unwrap();
        assert_eq!(u.dtype(), dtype);
        // uniform samples are never negative, normal ones are (64 of them)
        let s = u.to_string();
        assert!(!s.contains('-'), "{dtype}: {s}");
        assert!(n.to_string().contains('-'), "{dtype}");
    }
    // float64 uses 53-bit samples: torch.manual_seed(0); torch.rand(1, dtype=torch.float64)
    let g = Generator::with_seed(0);
    let d = Tensor::rand_with(&[1], ScalarType::Double, Some(&g)).unwrap();
    let first = ((2_357_136_044u64 << 32 | 2_546_248_239u64) & ((1 << 53) - 1)) as f64
        / (1u64 << 53) as f64;
    assert_eq!(d.to_vec::<f64>().unwrap(), [first]);
    let z = Tensor::randn_with(&[3, 2], ScalarType::ComplexFloat, Some(&g)).unwrap();
    assert_eq!(z.sizes().to_vec(), [3, 2]);
    assert!(z.to_string().ends_with("j]])"));
}

#[test]
fn integer_dtypes_are_refused_as_torch_does() {
    let e = Tensor::rand(&[2], ScalarType::Long).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::NotImplemented);
    assert_eq!(
        e.message(),
        "\"check_uniform_bounds\" not implemented for 'Long'"
    );
    let e = Tensor::randn(&[2], ScalarType::Int).err().unwrap();
    assert_eq!(
        e.message(),
        "\"normal_kernel_cpu\" not implemented for 'Int'"
    );
    let e = Tensor::rand(&[2], ScalarType::Bool).err().unwrap();
    assert_eq!(
        e.message(),
        "\"check_uniform_bounds\" not implemented for 'Bool'"
    );
}

#[test]
fn in_place_fills_check_arguments() {
    // (Version counters are bumped by the ADInplaceOrView kernels, as for every in-place op.)
    let g = Generator::with_seed(3);
    let t = Tensor::zeros(&[4], ScalarType::Float).unwrap();
    t.uniform_with_(-2.0, -1.0, Some(&g)).unwrap();
    assert!(t
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .all(|v| (-2.0..-1.0).contains(v)));
    let e = t.uniform_with_(1.0, 0.0, Some(&g)).err().unwrap();
    assert_eq!(
        e.message(),
        "uniform_ expects to return a [from, to) range, but found from=1 > to=0"
    );
    let e = t.normal_with_(0.0, -1.0, Some(&g)).err().unwrap();
    assert_eq!(e.message(), "normal expects std >= 0.0, but found std -1");
    // meta tensors get no data and no error
    let m = Tensor::rand_with(&[2], (ScalarType::Float, Device::META), Some(&g)).unwrap();
    assert_eq!(m.to_string(), "tensor(..., device='meta', size=(2,))");
}

#[test]
fn strided_fills_follow_tensor_iterator_order() {
    // b = torch.zeros(3, 2); torch.manual_seed(0); b.t().uniform_(): memory order, so b holds
    // what torch.rand(3, 2) would.
    let g = Generator::with_seed(0);
    let b = Tensor::zeros(&[3, 2], ScalarType::Float).unwrap();
    b.t().unwrap().uniform_with_(0.0, 1.0, Some(&g)).unwrap();
    assert_eq!(
        shown(&b),
        ["0.4963", "0.7682", "0.0885", "0.1320", "0.3074", "0.6341"]
    );
    // every other element: only those are drawn, in order
    g.manual_seed(0);
    let z = Tensor::zeros(&[4], ScalarType::Float).unwrap();
    z.slice_with(0, None, None, 2)
        .unwrap()
        .uniform_with_(0.0, 1.0, Some(&g))
        .unwrap();
    assert_eq!(shown(&z), ["0.4963", "0.0000", "0.7682", "0.0000"]);
    // a non-contiguous tensor of 16 takes the per-element normal path, as in torch
    g.manual_seed(0);
    let n = Tensor::zeros(&[4, 4], ScalarType::Float).unwrap();
    n.t().unwrap().normal_with_(0.0, 1.0, Some(&g)).unwrap();
    assert_eq!(shown(&n)[..3], ["1.5410", "-0.2934", "-2.1788"]);
    // complex views fill (re, im) pairs through the real view
    let c = Tensor::zeros(&[2, 2], ScalarType::ComplexFloat).unwrap();
    c.t().unwrap().uniform_with_(0.0, 1.0, Some(&g)).unwrap();
    assert!(!c.to_string().contains("0.+0.j"));
    // an expanded tensor cannot be written
    let e = Tensor::zeros(&[3, 1], ScalarType::Float)
        .unwrap()
        .expand(&[3, 2])
        .unwrap();
    assert_eq!(
        e.uniform_with_(0.0, 1.0, Some(&g)).err().unwrap().message(),
        "unsupported operation: more than one element of the written-to tensor refers to a \
         single memory location. Please clone() the tensor before performing the operation."
    );
}

#[test]
fn multinomial_and_exponential_reproduce_torch() {
    // torch.Generator().manual_seed(42), then the same calls in order.
    let g = Generator::with_seed(42);
    let p = Tensor::from_vec(vec![0.1f32, 0.0, 0.6, 0.3, 1.0, 1.0, 1.0, 1.0], &[2, 4]).unwrap();
    let rows = |t: Tensor| t.to_vec::<i64>().unwrap();
    assert_eq!(
        rows(p.multinomial_with(3, false, Some(&g)).unwrap()),
        [3, 2, 0, 1, 0, 3]
    );
    assert_eq!(
        rows(p.multinomial_with(6, true, Some(&g)).unwrap()),
        [0, 2, 2, 2, 3, 3, 1, 2, 0, 2, 2, 1]
    );
    let p64 = p.to_dtype(ScalarType::Double).unwrap();
    let one = p64.multinomial_with(1, false, Some(&g)).unwrap();
    assert_eq!(one.sizes().to_vec(), [2, 1]);
    assert_eq!(rows(one), [2, 0]);
    let e = Tensor::empty(&[4], ScalarType::Double).unwrap();
    e.exponential_with_(2.0, Some(&g)).unwrap();
    assert_eq!(
        e.to_vec::<f64>().unwrap(),
        [
            0.15397294302789502,
            0.06988022945158959,
            0.14507938242285623,
            0.13290040420078347
        ]
    );
}

#[test]
fn multinomial_samples_are_valid_and_errors_are_torchs() {
    let g = Generator::with_seed(3);
    // Without replacement: distinct categories, never a zero-probability one.
    let p = Tensor::from_vec(vec![0.0f32, 2.0, 0.0, 1.0, 5.0, 0.0, 3.0], &[7]).unwrap();
    for _ in 0..20 {
        let mut s = p
            .multinomial_with(4, false, Some(&g))
            .unwrap()
            .to_vec::<i64>()
            .unwrap();
        s.sort();
        assert_eq!(s, [1, 3, 4, 6]);
    }
    let with = p
        .multinomial_with(200, true, Some(&g))
        .unwrap()
        .to_vec::<i64>()
        .unwrap();
    assert!(with.iter().all(|&c| [1, 3, 4, 6].contains(&c)));
    let err = |t: &Tensor, n: i64, rep: bool| {
        t.multinomial_with(n, rep, Some(&g))
            .unwrap_err()
            .to_string()
    };
    assert!(err(&p, 8, false)
        .contains("cannot sample n_sample > prob_dist.size(-1) samples without replacement"));
    assert!(err(&p, 0, true).contains("cannot sample n_sample <= 0 samples"));
    let neg = Tensor::from_vec(vec![1.0f32, -1.0], &[2]).unwrap();
    assert!(err(&neg, 1, false)
        .contains("probability tensor contains either `inf`, `nan` or element < 0"));
    assert!(err(&neg, 2, true)
        .contains("invalid multinomial distribution (encountering probability entry < 0)"));
    let zeros = Tensor::zeros(&[2, 3], ScalarType::Float).unwrap();
    assert!(err(&zeros, 2, true)
        .contains("invalid multinomial distribution (sum of probabilities <= 0)"));
    let ints = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    assert!(err(&ints, 1, false)
        .contains("multinomial only supports floating-point dtypes for input, got: Long"));
    let e = Tensor::empty(&[2], ScalarType::Float).unwrap();
    assert!(e
        .exponential_with_(0.0, None)
        .unwrap_err()
        .to_string()
        .contains("exponential_ expects lambda > 0.0, but found lambda=0"));
    // Meta: shapes only.
    let m = Tensor::empty(&[3], (ScalarType::Float, Device::META)).unwrap();
    let s = m.multinomial_with(2, false, None).unwrap();
    assert_eq!(
        (s.sizes().to_vec(), s.dtype(), s.device()),
        (vec![2i64], ScalarType::Long, Device::META)
    );
}
