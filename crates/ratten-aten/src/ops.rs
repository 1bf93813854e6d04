//! Rust's operators on tensors (`&a + &b`, `-&a`, `a += 1.0`), as Python's `__add__` etc.:
//! a Rust number becomes a wrapped-number tensor (so it promotes like a Python number) and the
//! Tensor overload of the operator is called through the dispatcher. Operators cannot return
//! `Result`, so an error panics with its message; use the functions and methods
//! (`a.add(&b)?`) to handle errors.

use std::ops::{
    Add, AddAssign, BitAnd, BitAndAssign, BitOr, BitOrAssign, BitXor, BitXorAssign, Div, DivAssign,
    Mul, MulAssign, Neg, Not, Rem, RemAssign, Sub, SubAssign,
};

use ratten_core::{Result, Scalar};

use crate::generated::functions;
use crate::Tensor;

fn ok<T>(r: Result<T>) -> T {
    r.unwrap_or_else(|e| panic!("{}", e.message()))
}

fn wrap(s: impl Into<Scalar>, like: &Tensor) -> Tensor {
    ok(Tensor::wrapped_scalar_tensor(s, like.device()))
}

macro_rules! binary_operator {
    ($Trait:ident, $method:ident, $Assign:ident, $assign:ident, $f:path, $inplace:ident) => {
        impl $Trait<&Tensor> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                ok($f(self, rhs))
            }
        }
        impl $Trait<Tensor> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                ok($f(self, &rhs))
            }
        }
        impl $Trait<&Tensor> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                ok($f(&self, rhs))
            }
        }
        impl $Trait<Tensor> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                ok($f(&self, &rhs))
            }
        }
        impl $Assign<&Tensor> for Tensor {
            fn $assign(&mut self, rhs: &Tensor) {
                ok(self.$inplace(rhs));
            }
        }
        impl $Assign<Tensor> for Tensor {
            fn $assign(&mut self, rhs: Tensor) {
                ok(self.$inplace(&rhs));
            }
        }
        binary_operator!(@scalars $Trait, $method, $Assign, $assign, $f, $inplace, f64, i64, bool);
    };
    (@scalars $Trait:ident, $method:ident, $Assign:ident, $assign:ident, $f:path, $inplace:ident, $($s:ty),*) => {$(
        impl $Trait<$s> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: $s) -> Tensor {
                ok($f(self, &wrap(rhs, self)))
            }
        }
        impl $Trait<$s> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: $s) -> Tensor {
                ok($f(&self, &wrap(rhs, &self)))
            }
        }
        impl $Trait<&Tensor> for $s {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                ok($f(&wrap(self, rhs), rhs))
            }
        }
        impl $Trait<Tensor> for $s {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                ok($f(&wrap(self, &rhs), &rhs))
            }
        }
        impl $Assign<$s> for Tensor {
            fn $assign(&mut self, rhs: $s) {
                let r = wrap(rhs, self);
                ok(self.$inplace(&r));
            }
        }
    )*};
}

binary_operator!(Add, add, AddAssign, add_assign, functions::add, add_);
binary_operator!(Sub, sub, SubAssign, sub_assign, functions::sub, sub_);
binary_operator!(Mul, mul, MulAssign, mul_assign, functions::mul, mul_);
binary_operator!(Div, div, DivAssign, div_assign, functions::div, div_);
binary_operator!(
    Rem,
    rem,
    RemAssign,
    rem_assign,
    functions::remainder,
    remainder_
);
binary_operator!(
    BitAnd,
    bitand,
    BitAndAssign,
    bitand_assign,
    functions::bitwise_and,
    bitwise_and_
);
binary_operator!(
    BitOr,
    bitor,
    BitOrAssign,
    bitor_assign,
    functions::bitwise_or,
    bitwise_or_
);
binary_operator!(
    BitXor,
    bitxor,
    BitXorAssign,
    bitxor_assign,
    functions::bitwise_xor,
    bitwise_xor_
);

impl Neg for &Tensor {
    type Output = Tensor;
    fn neg(self) -> Tensor {
        ok(functions::neg(self))
    }
}

impl Neg for Tensor {
    type Output = Tensor;
    fn neg(self) -> Tensor {
        ok(functions::neg(&self))
    }
}

/// `~t` (`bitwise_not`), as Rust spells it: `!&t`.
impl Not for &Tensor {
    type Output = Tensor;
    fn not(self) -> Tensor {
        ok(functions::bitwise_not(self))
    }
}

impl Not for Tensor {
    type Output = Tensor;
    fn not(self) -> Tensor {
        ok(functions::bitwise_not(&self))
    }
}
