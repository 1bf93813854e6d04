//! View operators against the sizes, strides and offsets PyTorch gives, and their errors.

use ratten_aten::Tensor;
use ratten_core::{Device, Element, ErrorKind, ScalarType};

fn from_vec<T: Element>(v: Vec<T>, sizes: &[i64]) -> Tensor {
    Tensor::from_vec(v, sizes).unwrap()
}
fn vals<T: Element>(t: &Tensor) -> Vec<T> {
    t.to_vec::<T>().unwrap()
}
fn sizes(t: &Tensor) -> Vec<i64> {
    t.sizes().to_vec()
}
fn strides(t: &Tensor) -> Vec<i64> {
    t.strides().to_vec()
}
fn offset(t: &Tensor) -> i64 {
    t.storage_offset()
}
fn shares_storage(a: &Tensor, b: &Tensor) -> bool {
    a.storage().is_alias_of(&b.storage())
}

/// A float tensor 0..n with the given shape.
fn ar(sizes: &[i64]) -> Tensor {
    let n: i64 = sizes.iter().product();
    from_vec((0..n).map(|x| x as f32).collect(), sizes)
}

fn geom(t: &Tensor) -> (Vec<i64>, Vec<i64>, i64) {
    (sizes(t), strides(t), offset(t))
}

type Op = fn(&Tensor) -> ratten_core::Result<Tensor>;
/// (input shape, op, expected sizes, strides, storage offset).
type Case = (&'static [i64], Op, &'static [i64], &'static [i64], i64);

#[test]
fn view_table_matches_pytorch_strides() {
    // (input shape, op, expected sizes, strides, storage offset), as torch reports them.
    let cases: Vec<Case> = vec![
        (&[2, 3], |t| t.view(&[6]), &[6], &[1], 0),
        (&[2, 3], |t| t.view(&[3, -1]), &[3, 2], &[2, 1], 0),
        (
            &[6],
            |t| t.view(&[1, 2, 1, 3]),
            &[1, 2, 1, 3],
            &[6, 3, 3, 1],
            0,
        ),
        (
            &[4, 3],
            |t| t.t()?.view(&[3, 2, 2]),
            &[3, 2, 2],
            &[1, 6, 3],
            0,
        ),
        (&[2, 3], |t| t.reshape(&[3, 2]), &[3, 2], &[2, 1], 0),
        (&[2, 3], |t| t.transpose(0, 1), &[3, 2], &[1, 3], 0),
        (
            &[2, 3, 4],
            |t| t.transpose(-1, 0),
            &[4, 3, 2],
            &[1, 4, 12],
            0,
        ),
        (&[3], |t| t.t(), &[3], &[1], 0),
        (
            &[2, 3, 4],
            |t| t.permute(&[2, 0, 1]),
            &[4, 2, 3],
            &[1, 12, 4],
            0,
        ),
        (
            &[2, 3, 4],
            |t| t.permute(&[-1, -3, 1]),
            &[4, 2, 3],
            &[1, 12, 4],
            0,
        ),
        (&[3, 1], |t| t.expand(&[3, 4]), &[3, 4], &[1, 0], 0),
        (&[3], |t| t.expand(&[2, 3]), &[2, 3], &[0, 1], 0),
        (&[3, 1], |t| t.expand(&[-1, 4]), &[3, 4], &[1, 0], 0),
        (
            &[3, 1],
            |t| t.expand(&[2, -1, 4]),
            &[2, 3, 4],
            &[0, 1, 0],
            0,
        ),
        (&[3], |t| t.expand(&[1, 3]), &[1, 3], &[3, 1], 0),
        (&[1, 3, 1], |t| t.squeeze(), &[3], &[1], 0),
        (&[1, 3, 1], |t| t.squeeze_dim(0), &[3, 1], &[1, 1], 0),
        (&[1, 3, 1], |t| t.squeeze_dim(1), &[1, 3, 1], &[3, 1, 1], 0),
        (&[1, 3, 1], |t| t.squeeze_dims(&[0, -1]), &[3], &[1], 0),
        (&[2, 3], |t| t.unsqueeze(0), &[1, 2, 3], &[6, 3, 1], 0),
        (&[2, 3], |t| t.unsqueeze(1), &[2, 1, 3], &[3, 3, 1], 0),
        (&[2, 3], |t| t.unsqueeze(-1), &[2, 3, 1], &[3, 1, 1], 0),
        (&[4, 3], |t| t.narrow(0, 1, 2), &[2, 3], &[3, 1], 3),
        (&[4, 3], |t| t.narrow(-1, -2, 2), &[4, 2], &[3, 1], 1),
        (
            &[10],
            |t| t.slice_with(0, Some(2), Some(8), 3),
            &[2],
            &[3],
            2,
        ),
        (&[10], |t| t.slice_with(0, Some(-3), None, 1), &[3], &[1], 7),
        (
            &[10],
            |t| t.slice_with(0, Some(-100), Some(100), 4),
            &[3],
            &[4],
            0,
        ),
        (
            &[4, 5],
            |t| t.slice_with(1, Some(3), Some(1), 1),
            &[4, 0],
            &[5, 1],
            3,
        ),
        (&[2, 3], |t| t.select(1, -1), &[2], &[3], 2),
        (&[2, 3], |t| t.select(0, 1), &[3], &[1], 3),
        (&[2, 3, 4], |t| t.flatten_with(1, 2), &[2, 12], &[12, 1], 0),
        (&[2, 3, 4], |t| t.flatten_with(0, -1), &[24], &[1], 0),
        (
            &[2, 3, 4],
            |t| t.select(2, 1)?.flatten_with(0, 1),
            &[6],
            &[4],
            1,
        ),
    ];
    for (i, (shape, op, sz, st, off)) in cases.into_iter().enumerate() {
        let base = ar(shape);
        let v = op(&base).unwrap_or_else(|e| panic!("case {i}: {e:?}"));
        assert_eq!(geom(&v), (sz.to_vec(), st.to_vec(), off), "case {i}");
        assert!(
            shares_storage(&v, &base),
            "case {i}: a view shares its base's storage"
        );
    }
}

#[test]
fn views_see_the_base_values() {
    let x = ar(&[2, 3]);
    assert_eq!(vals::<f32>(&x.t().unwrap()), [0., 3., 1., 4., 2., 5.]);
    assert_eq!(vals::<f32>(&x.select(1, 2).unwrap()), [2., 5.]);
    assert_eq!(
        vals::<f32>(&x.expand(&[2, 2, 3]).unwrap()),
        [0., 1., 2., 3., 4., 5., 0., 1., 2., 3., 4., 5.]
    );
    assert_eq!(
        vals::<f32>(&ar(&[10]).slice_with(0, Some(1), None, 4).unwrap()),
        [1., 5., 9.]
    );
}

#[test]
fn views_share_the_version_counter() {
    let x = ar(&[2, 3]);
    let v = x.t().unwrap().unsqueeze(0).unwrap();
    assert!(x.version_counter().is_shared_with(v.version_counter()));
    v.bump_version();
    assert_eq!(x.version(), 1);
}

#[test]
fn reshape_copies_only_when_it_must() {
    let x = ar(&[2, 3]);
    let r = x.reshape(&[-1]).unwrap();
    assert!(shares_storage(&r, &x));
    let xt = x.t().unwrap();
    let r = xt.reshape(&[6]).unwrap();
    assert!(!shares_storage(&r, &x));
    assert_eq!(geom(&r), (vec![6], vec![1], 0));
    assert_eq!(vals::<f32>(&r), [0., 3., 1., 4., 2., 5.]);
    // flatten of a non-viewable tensor copies too
    let f = xt.flatten_with(0, 1).unwrap();
    assert!(!shares_storage(&f, &x));
    assert_eq!(vals::<f32>(&f), [0., 3., 1., 4., 2., 5.]);
    // 0-dim flatten gives shape [1]; start == end returns the tensor itself
    let s = from_vec(vec![7i64], &[]);
    assert_eq!(sizes(&s.flatten_with(0, -1).unwrap()), [1]);
    assert!(x.flatten_with(1, 1).unwrap().is_same(&x));
}

#[test]
fn contiguous_copies_strided_tensors_of_every_dtype() {
    let x = ar(&[3, 4]);
    assert!(x.contiguous().unwrap().is_same(&x));
    let xt = x.t().unwrap();
    assert!(!xt.is_contiguous());
    let c = xt.contiguous().unwrap();
    assert!(c.is_contiguous());
    assert!(!shares_storage(&c, &x));
    assert_eq!(geom(&c), (vec![4, 3], vec![3, 1], 0));
    assert_eq!(vals::<f32>(&c), vals::<f32>(&xt));
    // bool, int8 and complex128 move bytewise through the same copy
    let b = from_vec(vec![true, false, false, true, true, false], &[2, 3]);
    assert_eq!(
        vals::<bool>(&b.t().unwrap().contiguous().unwrap()),
        [true, true, false, true, false, false]
    );
    let i = from_vec(vec![1i8, -2, 3, -4], &[2, 2]);
    assert_eq!(
        vals::<i8>(&i.t().unwrap().contiguous().unwrap()),
        [1, 3, -2, -4]
    );
    use num_complex::Complex;
    let z = from_vec(
        vec![Complex::new(1.0f64, 2.0), Complex::new(3.0, 4.0)],
        &[2, 1],
    );
    let zc = z.expand(&[2, 2]).unwrap().contiguous().unwrap();
    assert_eq!(vals::<Complex<f64>>(&zc)[1], Complex::new(1.0, 2.0));
    // an expanded (stride 0) tensor is not contiguous; its copy is
    let e = ar(&[3, 1]).expand(&[3, 2]).unwrap();
    assert!(!e.is_contiguous());
    assert_eq!(
        vals::<f32>(&e.contiguous().unwrap()),
        [0., 0., 1., 1., 2., 2.]
    );
}

fn err(r: ratten_core::Result<Tensor>) -> (ErrorKind, String) {
    match r {
        Ok(t) => panic!("expected an error, got a tensor of sizes {:?}", sizes(&t)),
        Err(e) => (e.kind(), e.message().to_string()),
    }
}

#[test]
fn errors_match_pytorch() {
    use ErrorKind::{Index, Runtime};
    let x = ar(&[2, 3]);
    let cases: Vec<(ratten_core::Result<Tensor>, ErrorKind, &str)> = vec![
        (x.t().unwrap().view(&[6]), Runtime, "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead."),
        (x.view(&[-1, -1]), Runtime, "only one dimension can be inferred"),
        (x.view(&[2, 5]), Runtime, "shape '[2, 5]' is invalid for input of size 6"),
        (x.reshape(&[4, -1]), Runtime, "shape '[4, -1]' is invalid for input of size 6"),
        (x.transpose(0, 2), Index, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
        (ar(&[2, 3, 4]).t(), Runtime, "t() expects a tensor with <= 2 dimensions, but self is 3D"),
        (x.permute(&[0]), Runtime, "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = 2 is not equal to len(dims) = 1"),
        (x.permute(&[1, 1]), Runtime, "permute(): duplicate dims are not allowed."),
        (x.permute(&[0, -3]), Index, "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
        (ar(&[3, 2]).expand(&[3, 4]), Runtime, "The expanded size of the tensor (4) must match the existing size (2) at non-singleton dimension 1.  Target sizes: [3, 4].  Tensor sizes: [3, 2]"),
        (ar(&[3, 2]).expand(&[1]), Runtime, "expand(torch.FloatTensor{[3, 2]}, size=[1]): the number of sizes provided (1) must be greater or equal to the number of dimensions in the tensor (2)"),
        (ar(&[3]).expand(&[-1, 3]), Runtime, "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0"),
        (x.squeeze_dims(&[0, -2]), Runtime, "dim 0 appears multiple times in the list of dims"),
        (x.unsqueeze(3), Index, "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
        (x.narrow(0, 0, -1), Runtime, "narrow(): length must be non-negative."),
        (x.narrow(0, 3, 0), Index, "start out of range (expected to be in range of [-2, 2], but got 3)"),
        (x.narrow(0, 1, 2), Runtime, "start (1) + length (2) exceeds dimension size (2)."),
        (from_vec(vec![1.0f32], &[]).narrow(0, 0, 0), Runtime, "narrow() cannot be applied to a 0-dim tensor."),
        (x.slice_with(0, None, None, 0), Runtime, "slice step must be positive"),
        (from_vec(vec![1.0f32], &[]).slice_with(0, None, None, 1), Index, "slice() cannot be applied to a 0-dim tensor."),
        (x.select(0, 5), Index, "select(): index 5 out of range for tensor of size [2, 3] at dimension 0"),
        (x.select(-1, -4), Index, "select(): index -4 out of range for tensor of size [2, 3] at dimension 1"),
        (from_vec(vec![1.0f32], &[]).select(0, 0), Index, "select() cannot be applied to a 0-dim tensor."),
        (ar(&[2, 3, 4]).flatten_with(2, 0), Runtime, "flatten() has invalid args: start_dim cannot come after end_dim"),
    ];
    for (i, (r, kind, msg)) in cases.into_iter().enumerate() {
        assert_eq!(err(r), (kind, msg.to_string()), "case {i}");
    }
    // the type string names the dtype
    let l = from_vec(vec![1i64, 2], &[2]);
    assert!(err(l.expand(&[]))
        .1
        .starts_with("expand(torch.LongTensor{[2]}, size=[]):"));
}

#[test]
fn zero_dim_and_empty_tensors() {
    let s = from_vec(vec![2.5f32], &[]);
    assert_eq!(sizes(&s.unsqueeze(0).unwrap()), [1]);
    assert_eq!(sizes(&s.expand(&[2, 3]).unwrap()), [2, 3]);
    assert_eq!(strides(&s.expand(&[2, 3]).unwrap()), [0, 0]);
    assert_eq!(sizes(&s.transpose(0, -1).unwrap()), Vec::<i64>::new());
    assert_eq!(sizes(&s.squeeze_dim(0).unwrap()), Vec::<i64>::new());
    assert_eq!(sizes(&s.view(&[1, 1]).unwrap()), [1, 1]);
    let e = Tensor::empty(&[0, 3], ScalarType::Float).unwrap();
    assert_eq!(geom(&e.view(&[3, 0]).unwrap()), (vec![3, 0], vec![1, 1], 0));
    assert_eq!(
        err(e.view(&[-1, 0])).1,
        "cannot reshape tensor of 0 elements into shape [-1, 0] because the unspecified dimension size -1 can be any value and is ambiguous"
    );
    assert_eq!(sizes(&e.reshape(&[3, 0, 1]).unwrap()), [3, 0, 1]);
}

#[test]
fn meta_tensors_take_views_and_copies_without_data() {
    let m = Tensor::empty(&[2, 3], (ScalarType::Float, Device::META)).unwrap();
    let t = m.t().unwrap();
    assert_eq!(geom(&t), (vec![3, 2], vec![1, 3], 0));
    let r = t.reshape(&[6]).unwrap();
    assert!(r.is_meta());
    assert_eq!(geom(&r), (vec![6], vec![1], 0));
    assert!(t.contiguous().unwrap().is_contiguous());
}

/// Random shapes, permutations and re-factorisations: whenever `view` succeeds on a permuted
/// tensor it must show the same values, in the same order, as a copy reshaped.
#[test]
fn view_agrees_with_copy_on_random_geometries() {
    let mut rng = ratten_aten::random::Mt19937::new(12345);
    let mut pick = |n: u32| rng.next_u32() % n;
    let mut viewed = 0;
    for _ in 0..400 {
        let ndim = 1 + pick(4) as usize;
        let shape: Vec<i64> = (0..ndim).map(|_| 1 + pick(4) as i64).collect();
        let x = ar(&shape);
        let mut perm: Vec<i64> = (0..ndim as i64).collect();
        for i in (1..ndim).rev() {
            perm.swap(i, pick(i as u32 + 1) as usize);
        }
        let p = x.permute(&perm).unwrap();
        // a new shape: the numel's prime factors dealt into 1..=4 dims
        let mut numel: i64 = shape.iter().product();
        let mut factors = Vec::new();
        let mut f = 2;
        while numel > 1 {
            while numel % f == 0 {
                factors.push(f);
                numel /= f;
            }
            f += 1;
        }
        let mut target = vec![1i64; 1 + pick(4) as usize];
        for fac in factors {
            let k = pick(target.len() as u32) as usize;
            target[k] *= fac;
        }
        let expected = vals::<f32>(&p.contiguous().unwrap());
        let r = p.reshape(&target).unwrap();
        assert_eq!(
            vals::<f32>(&r),
            expected,
            "reshape {shape:?} perm {perm:?} -> {target:?}"
        );
        if let Ok(v) = p.view(&target) {
            viewed += 1;
            assert!(shares_storage(&v, &x));
            assert_eq!(
                vals::<f32>(&v),
                expected,
                "view {shape:?} perm {perm:?} -> {target:?}"
            );
        }
    }
    assert!(viewed > 100, "only {viewed} geometries were viewable");
}

// ---- the views declared with PyTorch's entries -------------------------------------------

#[test]
fn view_dtype_rescales_the_last_dim_as_pytorch() {
    let x = from_vec((0..8i16).collect::<Vec<_>>(), &[2, 4]);
    let f = x.view_dtype(ScalarType::Float).unwrap();
    assert_eq!(geom(&f), (vec![2, 2], vec![2, 1], 0));
    assert!(shares_storage(&f, &x));
    let back = f.view_dtype(ScalarType::Short).unwrap();
    assert_eq!(vals::<i16>(&back), (0..8).collect::<Vec<i16>>());
    let b = f.view_dtype(ScalarType::Byte).unwrap();
    assert_eq!(geom(&b), (vec![2, 8], vec![8, 1], 0));
    // Same element size: the geometry is kept.
    let i = ar(&[2, 3])
        .t()
        .unwrap()
        .view_dtype(ScalarType::Int)
        .unwrap();
    assert_eq!(geom(&i), (vec![3, 2], vec![1, 3], 0));
    let e = |r: ratten_core::Result<Tensor>| r.unwrap_err().message().to_string();
    assert_eq!(
        e(ar(&[]).view_dtype(ScalarType::Short)),
        "self.dim() cannot be 0 to view Float as Short (different element sizes)"
    );
    assert_eq!(
        e(from_vec(vec![0i16; 3], &[3]).view_dtype(ScalarType::Float)),
        "self.size(-1) must be divisible by 2 to view Short as Float (different element sizes), \
         but got 3"
    );
    assert_eq!(
        e(ar(&[2, 3]).t().unwrap().view_dtype(ScalarType::Short)),
        "self.stride(-1) must be 1 to view Float as Short (different element sizes), but got 3"
    );
    let odd = from_vec(vec![0i16; 9], &[3, 3])
        .slice_with(1, None, Some(2), 1)
        .unwrap();
    assert_eq!(
        e(odd.view_dtype(ScalarType::Float)),
        "self.stride(0) must be divisible by 2 to view Short as Float (different element sizes), \
         but got 3"
    );
}

#[test]
fn movedim_unflatten_unfold_diagonal() {
    let x = ar(&[2, 3, 4]);
    assert_eq!(sizes(&x.movedim(0, 2).unwrap()), vec![3, 4, 2]);
    assert_eq!(
        sizes(&x.movedim_intlist(&[0, 1], &[2, 0]).unwrap()),
        vec![3, 4, 2]
    );
    assert_eq!(
        x.movedim_intlist(&[0, 0], &[1, 2]).unwrap_err().message(),
        "movedim: repeated dim in `source` ([0, 0])"
    );
    assert_eq!(
        x.movedim_intlist(&[0, 1], &[1]).unwrap_err().message(),
        "movedim: Invalid source or destination dims: source ([0, 1] dims) should contain the \
         same number of dims as destination ([1] dims)"
    );
    let u = x.unflatten(2, &[2, -1]).unwrap();
    assert_eq!(geom(&u), (vec![2, 3, 2, 2], vec![12, 4, 2, 1], 0));
    assert_eq!(
        x.unflatten(2, &[3, 2]).unwrap_err().message(),
        "unflatten: Provided sizes [3, 2] don't multiply up to the size of dim 2 (4) in the \
         input tensor"
    );
    let w = x.unfold(2, 2, 1).unwrap();
    assert_eq!(geom(&w), (vec![2, 3, 3, 2], vec![12, 4, 1, 1], 0));
    assert_eq!(vals::<f32>(&w.select(3, 1).unwrap())[..3], [1.0, 2.0, 3.0]);
    assert_eq!(
        x.unfold(2, 5, 1).unwrap_err().message(),
        "maximum size for tensor at dimension 2 is 4 but size is 5"
    );
    assert_eq!(
        x.unfold(2, 2, 0).unwrap_err().message(),
        "step is 0 but must be > 0"
    );
    assert_eq!(sizes(&ar(&[]).unfold(0, 1, 1).unwrap()), vec![1]);
    let d = ar(&[3, 4]).diagonal_with(1, 0, 1).unwrap();
    assert_eq!(
        (geom(&d), vals::<f32>(&d)),
        ((vec![3], vec![5], 1), vec![1.0, 6.0, 11.0])
    );
    let d = ar(&[3, 4]).diagonal_with(-1, 0, 1).unwrap();
    assert_eq!(vals::<f32>(&d), vec![4.0, 9.0]);
    assert_eq!(sizes(&x.diagonal_with(-5, 0, 1).unwrap()), vec![4, 0]);
    assert_eq!(
        x.diagonal_with(0, 1, 1).unwrap_err().message(),
        "diagonal dimensions cannot be identical 1, 1"
    );
}

#[test]
fn split_chunk_unbind_give_views_as_pytorch() {
    let x = ar(&[5, 2]);
    let parts = x.split(2).unwrap();
    assert_eq!(
        parts.iter().map(sizes).collect::<Vec<_>>(),
        vec![vec![2, 2], vec![2, 2], vec![1, 2]]
    );
    assert!(parts.iter().all(|p| shares_storage(p, &x)));
    assert_eq!(offset(&parts[2]), 8);
    let parts = x.split_sizes_with(&[1, 4], 0).unwrap();
    assert_eq!(sizes(&parts[1]), vec![4, 2]);
    assert_eq!(
        x.split_with_sizes_with(&[1, 2], 1)
            .map(|_| ())
            .unwrap_err()
            .message(),
        "split_with_sizes expects split_sizes to sum exactly to 2 (input tensor's size at \
         dimension 1), but got split_sizes=[1, 2]"
    );
    assert_eq!(
        x.split(0).map(|_| ()).unwrap_err().message(),
        "split_size can only be 0 if dimension size is 0, but got dimension size of 5"
    );
    assert_eq!(
        x.chunk(2).unwrap().iter().map(sizes).collect::<Vec<_>>(),
        vec![vec![3, 2], vec![2, 2]]
    );
    assert_eq!(x.chunk_with(3, 1).unwrap().len(), 2);
    assert_eq!(
        x.chunk(0).map(|_| ()).unwrap_err().message(),
        "chunk expects `chunks` to be greater than 0, got: 0"
    );
    let rows = x.unbind().unwrap();
    assert_eq!(rows.len(), 5);
    assert_eq!(vals::<f32>(&rows[3]), vec![6.0, 7.0]);
    let cols = x.unbind_with(-1).unwrap();
    assert_eq!((sizes(&cols[1]), strides(&cols[1])), (vec![5], vec![2]));
    let e = ar(&[]).unbind().unwrap_err();
    let (k, m) = (e.kind(), e.message().to_string());
    assert_eq!(
        (k, m.as_str()),
        (
            ErrorKind::Index,
            "Dimension specified as 0 but tensor has no dimensions"
        )
    );
}

#[test]
fn narrow_with_a_tensor_start_and_clone_memory_formats() {
    let x = ar(&[4, 3]);
    let start = Tensor::from_vec(vec![1i64], &[]).unwrap();
    let n = x.narrow_tensor(0, &start, 2).unwrap();
    assert_eq!(geom(&n), (vec![2, 3], vec![3, 1], 3));
    let bad = Tensor::from_vec(vec![0.5f32], &[]).unwrap();
    assert_eq!(
        x.narrow_tensor(0, &bad, 1).unwrap_err().message(),
        "start must be an 0-dim integral Tensor."
    );
    // clone keeps a dense layout (Preserve), makes gaps contiguous, and takes channels_last.
    let xt = ar(&[2, 3, 4]).transpose(0, 2).unwrap();
    let c = xt.clone_with(None).unwrap();
    assert_eq!(strides(&c), vec![1, 4, 12]);
    assert!(!shares_storage(&c, &xt));
    assert_eq!(vals::<f32>(&c), vals::<f32>(&xt));
    let gap = ar(&[2, 3, 4]).slice_with(2, None, None, 2).unwrap();
    assert_eq!(strides(&gap.clone_with(None).unwrap()), vec![6, 2, 1]);
    let nchw = ar(&[2, 3, 4, 5]);
    let cl = nchw
        .clone_with(Some(ratten_aten::native::MemoryFormat::ChannelsLast))
        .unwrap();
    assert_eq!(strides(&cl), vec![60, 1, 15, 3]);
    assert_eq!(vals::<f32>(&cl), vals::<f32>(&nchw));
    assert_eq!(
        x.clone_with(Some(ratten_aten::native::MemoryFormat::ChannelsLast))
            .unwrap_err()
            .message(),
        "required rank 4 tensor to use channels_last format"
    );
    // contiguous returns the tensor itself when nothing must move.
    assert!(x.contiguous().unwrap().is_same(&x));
    let cl2 = cl
        .__dispatch_contiguous_with(ratten_aten::native::MemoryFormat::ChannelsLast)
        .unwrap();
    assert!(cl2.is_same(&cl));
}

#[test]
fn views_run_through_the_dispatcher_on_meta() {
    let m = Tensor::empty(&[2, 3, 4], (ScalarType::Float, Device::META)).unwrap();
    let checks: Vec<(Tensor, Vec<i64>)> = vec![
        (m.view(&[6, 4]).unwrap(), vec![6, 4]),
        (m.permute(&[2, 0, 1]).unwrap(), vec![4, 2, 3]),
        (m.unfold(2, 2, 2).unwrap(), vec![2, 3, 2, 2]),
        (m.diagonal().unwrap(), vec![4, 2]),
        (m.movedim(2, 0).unwrap(), vec![4, 2, 3]),
        (m.view_dtype(ScalarType::Half).unwrap(), vec![2, 3, 8]),
        (m.transpose(0, 2).unwrap().reshape(&[-1]).unwrap(), vec![24]),
        (m.clone_with(None).unwrap(), vec![2, 3, 4]),
    ];
    for (t, want) in checks {
        assert!(t.is_meta());
        assert_eq!(sizes(&t), want);
    }
    assert_eq!(m.split(2).unwrap().len(), 1);
    // Every view overload has a dispatcher entry with a kernel.
    let d = ratten_dispatch::Dispatcher::singleton();
    for name in [
        "aten::view",
        "aten::as_strided",
        "aten::transpose.int",
        "aten::squeeze.dims",
        "aten::slice.Tensor",
        "aten::select.int",
        "aten::unbind.int",
        "aten::split.Tensor",
        "aten::split_with_sizes",
        "aten::unfold",
        "aten::diagonal",
        "aten::alias",
        "aten::detach",
        "aten::clone",
        "aten::contiguous",
        "aten::reshape",
        "aten::view.dtype",
        "aten::movedim.int",
    ] {
        let (n, o) = name.split_once('.').unwrap_or((name, ""));
        assert!(
            d.find_schema_or_throw(n, o).is_ok(),
            "{name} is not registered"
        );
    }
}
