//! searchsorted's loop (ATen's `Bucketization.cpp`, `searchsorted_cpu_contiguous`): a binary
//! search per element of the input, over the whole of a 1-D boundaries tensor or over the
//! boundaries row of the same leading indices, optionally through a sorter permutation;
//! elements in parallel. The checks, dtype promotion and contiguous copies are the front
//! end's (`native/bucketization.rs`).

use std::hint::select_unpredictable;

use half::{bf16, f16};
use ratten_core::{Error, PodElement, Result, ScalarType, TensorAccess};

use crate::native::cpu::scatter_gather_kernels::SyncPtr;
use crate::native::cpu::unique_kernels::dispatch_types;
use crate::tensor_iterator::parallel::parallel_for;
use crate::Tensor;

/// `SEARCHSORTED_GRAIN_SIZE`: the elements below which the search runs on one thread.
pub const SEARCHSORTED_GRAIN_SIZE: i64 = 200;

/// An output position type (`out_int32` picks int32, else int64).
trait Position: PodElement {
    fn from_pos(p: usize) -> Self;
}

impl Position for i32 {
    #[inline(always)]
    fn from_pos(p: usize) -> i32 {
        // The front end refuses boundaries rows of INT_MAX elements or more for int32.
        p as i32
    }
}

impl Position for i64 {
    #[inline(always)]
    fn from_pos(p: usize) -> i64 {
        p as i64
    }
}

/// The first position in the row `bd[start..start + len]` (in `sort`'s order when given) whose
/// value is not below `val` (`RIGHT`: not at most `val`), as `cus_lower_bound` /
/// `cus_upper_bound`, with their midpoints (so boundaries holding NaN, which are not sorted
/// for `<`, give torch's positions too).
///
/// Note [A search without branches]
/// The comparisons of a search are unpredictable: a branch on each would be mispredicted half
/// the time, which costs more than the rest of the step. The step is therefore one comparison
/// (`RIGHT` is a constant, so `right` costs no second comparison) and two selects that the
/// compiler is asked to keep as conditional moves; only the loop's exit is a branch. A
/// `match` on `partial_cmp` or a runtime `right` made LLVM turn the selects back into
/// branches, several times slower.
#[inline(always)]
fn bound<T: PartialOrd + Copy, const RIGHT: bool>(
    bd: &[T],
    sort: Option<&[i64]>,
    start: usize,
    len: usize,
    val: T,
) -> usize {
    let (mut lo, mut hi) = (0usize, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let at = match sort {
            Some(s) => start + s[start + mid] as usize,
            None => start + mid,
        };
        let m = bd[at];
        // Negated as torch's: a NaN on either side compares false, so it goes right.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        let go_right = if RIGHT { !(m > val) } else { !(m >= val) };
        lo = select_unpredictable(go_right, mid + 1, lo);
        hi = select_unpredictable(go_right, hi, mid);
    }
    lo
}

/// The search over contiguous slices: `input` in rows of `row_in` elements, the boundaries in
/// rows of `row_bd` (one row for all when `one_row`), `out` the output's first element.
#[allow(clippy::too_many_arguments)]
fn search<T: PartialOrd + Copy + Sync, O: Position, const RIGHT: bool>(
    input: &[T],
    bd: &[T],
    sort: Option<&[i64]>,
    row_in: usize,
    row_bd: usize,
    one_row: bool,
    out: SyncPtr,
) -> Result<()> {
    parallel_for(0, input.len() as i64, SEARCHSORTED_GRAIN_SIZE, |b, e| {
        let b = b as usize;
        // The boundaries row of element b and b's place in its input row, then advanced
        // element by element (no division per element).
        let (mut row, mut col) = if one_row {
            (0, 0)
        } else {
            (b / row_in, b % row_in)
        };
        for (k, &v) in input[b..e as usize].iter().enumerate() {
            let pos = bound::<T, RIGHT>(bd, sort, row * row_bd, row_bd, v);
            // SAFETY: `out` is the first of the output's `input.len()` contiguous elements of
            // O, held for writing by the caller's guard during the region; b + k is below
            // that, and the chunks of the region are disjoint, so each is written once.
            unsafe { out.get().cast::<O>().add(b + k).write(O::from_pos(pos)) };
            if !one_row {
                col += 1;
                if col == row_in {
                    col = 0;
                    row += 1;
                }
            }
        }
    })
}

/// `searchsorted_cpu_contiguous`: writes into `result` (int32 or int64, contiguous, `input`'s
/// element count) the position of each element of `input` in `boundaries` (same dtype, both
/// contiguous; 1-D, or with `input`'s leading sizes), through `sorter` (int64, `boundaries`'
/// shape, each row a permutation of its positions) when given.
pub fn searchsorted_kernel(
    result: &Tensor,
    input: &Tensor,
    boundaries: &Tensor,
    right: bool,
    sorter: Option<&Tensor>,
) -> Result<()> {
    let n = input.numel() as usize;
    let row_in = if input.dim() == 0 {
        1
    } else {
        input.sizes().last().copied().unwrap_or(1) as usize
    };
    let row_bd = boundaries.sizes().last().copied().unwrap_or(1) as usize;
    let one_row = boundaries.dim() == 1;
    if result.numel() as usize != n
        || (!one_row && row_in > 0 && n / row_in * row_bd > boundaries.numel() as usize)
    {
        return Err(Error::runtime(
            "searchsorted: the input, boundaries and result do not fit together",
        ));
    }
    if n == 0 {
        return Ok(());
    }
    let mut reads = vec![input.base(), boundaries.base()];
    if let Some(s) = sorter {
        reads.push(s.base());
    }
    let g = TensorAccess::new(&reads, &[result.base()])?;
    let sort = match sorter {
        Some(_) => Some(g.input_slice::<i64>(2)?),
        None => None,
    };
    let out = g.output(0)?;
    if !out.is_contiguous() {
        return Err(Error::runtime(
            "searchsorted: the result must be contiguous",
        ));
    }
    // AT_DISPATCH_ALL_TYPES_AND2(Half, BFloat16).
    dispatch_types!(input.dtype(), "searchsorted_out_cpu", [
        Byte => u8, Char => i8, Short => i16, Int => i32, Long => i64,
        Half => f16, BFloat16 => bf16, Float => f32, Double => f64,
    ], T => {
        let data = g.input_slice::<T>(0)?;
        let bd = g.input_slice::<T>(1)?;
        macro_rules! run {
            ($O:ty) => {{
                let out = SyncPtr(out.data_ptr_mut::<$O>()?.cast());
                if right {
                    search::<T, $O, true>(data, bd, sort, row_in, row_bd, one_row, out)
                } else {
                    search::<T, $O, false>(data, bd, sort, row_in, row_bd, one_row, out)
                }
            }};
        }
        match result.dtype() {
            ScalarType::Int => run!(i32),
            _ => run!(i64),
        }
    })
}
