//! Advanced indexing through the public API: `index`, `index_put_` and `nonzero` agree with
//! each other and with the views they generalise.

use ratten_aten::functions::{index, index_put_, nonzero};
use ratten_aten::Tensor;
use ratten_core::{ErrorKind, ScalarType};

fn long(v: &[i64]) -> Tensor {
    Tensor::from_slice(v, &[v.len() as i64]).unwrap()
}

#[test]
fn index_of_a_range_equals_select_for_every_dtype() {
    for dt in [
        ScalarType::Bool,
        ScalarType::Byte,
        ScalarType::Half,
        ScalarType::Double,
        ScalarType::ComplexFloat,
    ] {
        let x = Tensor::zeros(&[4, 3], dt).unwrap();
        let r = index(&x, &[Some(long(&[3, 0]))]).unwrap();
        assert_eq!(r.sizes().to_vec(), vec![2, 3]);
        assert_eq!(r.dtype(), dt);
    }
    let x = Tensor::from_vec((0..12i32).collect(), &[4, 3]).unwrap();
    let r = index(&x, &[None, Some(long(&[2]))]).unwrap();
    assert_eq!(r.to_vec::<i32>().unwrap(), vec![2, 5, 8, 11]);
    // on a transposed (strided) view
    let t = x.t().unwrap();
    let r = index(&t, &[Some(long(&[1])), Some(long(&[3]))]).unwrap();
    assert_eq!(r.to_vec::<i32>().unwrap(), vec![10]);
}

#[test]
fn mask_round_trip_through_nonzero_and_index_put() {
    let x = Tensor::from_slice(&[0.5f32, -1.0, 2.0, -3.0], &[2, 2]).unwrap();
    let m = Tensor::from_slice(&[false, true, false, true], &[2, 2]).unwrap();
    assert_eq!(
        nonzero(&m).unwrap().to_vec::<i64>().unwrap(),
        vec![0, 1, 1, 1]
    );
    assert_eq!(
        index(&x, &[Some(m.clone())])
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![-1.0, -3.0]
    );
    let zero = Tensor::zeros(&[], ScalarType::Int).unwrap();
    index_put_(&x, &[Some(m)], &zero).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![0.5, 0.0, 2.0, 0.0]);
    // an index of another device-less kind of error
    let e = index(&x, &[Some(long(&[2]))]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Index);
    assert_eq!(
        e.message(),
        "index 2 is out of bounds for dimension 0 with size 2"
    );
}
