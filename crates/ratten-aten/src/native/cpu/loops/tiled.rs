//! The tiled forms of a 2-D loop with a transposed operand (one that moves far along the inner
//! dimension and little along the outer): walked in [`TILE`] x [`TILE`] tiles so that the
//! operand's lines are reused from L1 and the TLB is not thrashed, the transposed input either
//! copied into an L1 tile ([`tiled_2d`]) or combined straight from in-register block
//! transposes ([`fused_2d`]).

use ratten_core::ScalarType;

use crate::dispatch_stub::Isa;
use crate::native::cpu::elements::{Elem, Kind};
use crate::native::cpu::simd::{peel_to_line, stream_fence, CAN_STREAM};
use crate::native::cpu::transpose;

use super::block::{load_block, round_via, store_block};
use super::{compute_run, OpN, Scratch, BLOCK, MAX_OPERANDS};

/// Tile edge for transposed operands.
pub const TILE: usize = 64;

/// Whether the 2-D loop should be tiled: some operand moves far along the inner dimension
/// but little along the outer one (a transposed operand).
#[inline(always)]
pub(crate) fn wants_tiling(s0: &[isize], s1: &[isize], n0: usize, n1: usize) -> bool {
    if n0 < TILE || n1 < 2 {
        return false;
    }
    s0.iter()
        .zip(s1)
        .any(|(a, b)| a.unsigned_abs() > 256 && b.unsigned_abs() < a.unsigned_abs())
}

/// Whether input operand `q` is transposed: it moves far along the inner dimension and less
/// along the outer one.
#[inline(always)]
fn is_transposed(s0: &[isize; MAX_OPERANDS], s1: &[isize; MAX_OPERANDS], q: usize) -> bool {
    s0[q].unsigned_abs() > 256 && s1[q].unsigned_abs() < s0[q].unsigned_abs()
}

/// The input (index `k` among the inputs) whose tiles [`fused_2d`] can compute straight from
/// the transposed registers: the only transposed input, of the computation type and
/// contiguous along the outer dimension, with every other input of the computation type and
/// contiguous along the inner dimension, and the output of the result type, contiguous
/// along the inner dimension (no casting anywhere, not bool).
#[inline(always)]
fn fused_input<I: Isa, M: Elem, R: Elem, const N: usize>(
    via: Option<ScalarType>,
    dts: &[ScalarType; MAX_OPERANDS],
    s0: &[isize; MAX_OPERANDS],
    s1: &[isize; MAX_OPERANDS],
) -> Option<usize> {
    let (em, er) = (size_of::<M>() as isize, size_of::<R>() as isize);
    if via.is_some() || M::KIND == Kind::Bool || dts[0] != R::DTYPE || s0[0] != er {
        return None;
    }
    if transpose::block_side::<I>(em as usize) == 0 {
        return None;
    }
    let mut found = None;
    for k in 0..N {
        let q = k + 1;
        if dts[q] != M::DTYPE {
            return None;
        }
        if is_transposed(s0, s1, q) {
            if found.is_some() || s1[q] != em {
                return None;
            }
            found = Some(k);
        } else if s0[q] != em {
            return None;
        }
    }
    found
}

/// Rows of the output (the outer dimension) per tile of [`fused_2d`]: a tile reads
/// `FUSED_TILE_J` elements of each of its `TILE` rows of the transposed operand, so each
/// visit to one of that operand's 4 KB pages takes a kilobyte of f32, not the 256 bytes of
/// square 64x64 tiles. In the standalone loop 128 and 256 rows were a few percent faster
/// than 64, and 512 (128 KB of each operand per tile) much slower.
const FUSED_TILE_J: usize = 256;

/// The fused form of [`tiled_2d`] for the operands [`fused_input`] accepts, input `t` being
/// the transposed one: each `K` x `K` block of it is transposed in registers
/// (`transpose::with_block_t`), and each of its columns is combined at once with the `K`
/// elements of the other inputs along the inner dimension and stored to the output, so the
/// transposed operand is never stored to and reloaded from an L1 tile.
///
/// What makes it run near the memory's speed on numpy's arrays (4 KB pages, rows starting
/// 16 bytes into a line), measured in a standalone loop of the 4096x4096 f32 add (see Note
/// [Pointwise kernels at bandwidth]):
/// - the block grid along the inner dimension starts where the output's rows are 64-byte
///   aligned (`ioff` elements in; those first and the last partial columns are computed
///   element by element), so no store, and for equal offsets no load of the other inputs,
///   splits across two lines;
/// - with `stream` (outputs above `STREAM_MIN_BYTES`) and every output row line-aligned,
///   each computed column is written by one non-temporal store (no read for ownership);
/// - tiles of `TILE` x [`FUSED_TILE_J`];
/// - every load of a block before any of its stores, and the lines of the block two blocks
///   ahead along the inner dimension prefetched into L2 (`transpose::prefetch_rows_l2`), for
///   every operand (each is a short run on its own 4 KB page, which the hardware prefetchers
///   do not fetch ahead).
///
/// # Safety
/// As [`tiled_2d`], with `t` from [`fused_input`] for these operands and `K` the
/// `transpose::block_side` of `M` under `I`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn fused_2d<I: Isa, M: Elem, R: Elem, const N: usize, const K: usize>(
    t: usize,
    data: &[*mut u8],
    s0: &[isize; MAX_OPERANDS],
    s1: &[isize; MAX_OPERANDS],
    n0: usize,
    n1: usize,
    f: &impl OpN<M, R, N>,
    stream: bool,
) {
    let tq = t + 1;
    let at = |k: usize, i: usize, j: usize| -> *mut u8 {
        data[k]
            .wrapping_offset(i as isize * s0[k])
            .wrapping_offset(j as isize * s1[k])
    };
    // One element (i, j) (the edges of the grid).
    let one = |i: usize, j: usize| {
        let mut x = [M::default(); N];
        for (k, xk) in x.iter_mut().enumerate() {
            // SAFETY: element (i, j) of input k, inside the 2-D loop, of type M.
            *xk = unsafe { at(k + 1, i, j).cast::<M>().read_unaligned() };
        }
        // SAFETY: element (i, j) of the output, of type R.
        unsafe { at(0, i, j).cast::<R>().write_unaligned(f.call(x)) };
    };
    let es = |k: usize| {
        if k == 0 {
            size_of::<R>()
        } else {
            size_of::<M>()
        }
    };
    let er = size_of::<R>();
    // The grid of whole blocks along the inner dimension: [ioff, iend).
    let ioff = match peel_to_line(data[0], er, n0) {
        p if p >= n0 => 0,
        p => p,
    };
    let iend = ioff + (n0 - ioff) / K * K;
    // Streaming needs every column store of every row on a line boundary of its size.
    let stream = stream
        && CAN_STREAM
        && transpose::can_stream_block::<I>(K * er)
        && s1[0].rem_euclid(64) == 0
        && (data[0] as usize + ioff * er).is_multiple_of(K * er);
    // The columns left of and right of the grid, row by row (contiguous in the output).
    for j in 0..n1 {
        for i in (0..ioff).chain(iend..n0) {
            one(i, j);
        }
    }
    let mut j0 = 0;
    while j0 < n1 {
        let lj = FUSED_TILE_J.min(n1 - j0);
        let fj = lj - lj % K;
        let mut i0 = ioff;
        while i0 < iend {
            let li = TILE.min(iend - i0);
            let mut c = 0;
            while c < fj {
                let mut r = 0;
                while r < li {
                    let (i, j) = (i0 + r, j0 + c);
                    // Two blocks ahead along the inner dimension (into the next tile near
                    // this one's end), a block at a time (a whole tile asked for at once
                    // filled the miss buffers and stalled): K rows of K elements of the
                    // transposed input, K elements of K rows of the other operands (not of
                    // a streamed output, which is never read).
                    let ni = i + 2 * K;
                    if ni < iend {
                        transpose::prefetch_rows_l2(at(tq, ni, j), s0[tq], K, K * es(tq));
                        for k in (0..N + 1).filter(|&k| k != tq && (k != 0 || !stream)) {
                            transpose::prefetch_rows_l2(at(k, ni, j), s1[k], K, K * es(k));
                        }
                    }
                    // SAFETY: the K x K block at (i, j) of input t lies in the grid; its
                    // column cc holds elements i..i + K of column j + cc, which the other
                    // operands hold contiguously (unit stride along the inner dimension) at
                    // (i, j + cc); with `stream`, the output's K elements there start on a
                    // boundary of their size (checked above for row 0; rows are whole lines
                    // apart).
                    unsafe {
                        transpose::with_block_t::<I, M, K>(at(tq, i, j), s0[tq], |cols| {
                            // Every load of the block before any store: the rows of the
                            // output and of the other inputs sit at equal offsets in their
                            // 4 KB pages (numpy's arrays), and a load issued after a store to
                            // an address equal in its low 12 bits waits for that store.
                            let mut x = [[[M::default(); K]; N]; K];
                            for (cc, xc) in x.iter_mut().enumerate() {
                                for (k, xck) in xc.iter_mut().enumerate() {
                                    *xck = if k == t {
                                        cols[cc]
                                    } else {
                                        at(k + 1, i, j + cc).cast::<[M; K]>().read_unaligned()
                                    };
                                }
                            }
                            for (cc, xc) in x.iter().enumerate() {
                                let mut y = [R::default(); K];
                                for (l, yl) in y.iter_mut().enumerate() {
                                    let mut args = [M::default(); N];
                                    for (k, a) in args.iter_mut().enumerate() {
                                        *a = xc[k][l];
                                    }
                                    *yl = f.call(args);
                                }
                                let dst = at(0, i, j + cc);
                                if stream {
                                    transpose::stream_block::<I, [R; K]>(dst, y);
                                } else {
                                    dst.cast::<[R; K]>().write_unaligned(y);
                                }
                            }
                        })
                    };
                    r += K;
                }
                c += K;
            }
            i0 += TILE;
        }
        // The rows of the tile that are not a whole block: the transposed operand is read
        // along its contiguous direction (j innermost).
        for i in ioff..iend {
            for j in j0 + fj..j0 + lj {
                one(i, j);
            }
        }
        j0 += lj;
    }
    if stream {
        stream_fence();
    }
}

/// The tiled form of [`loop_2d`](super::loop_2d). A transposed input is first copied into an L1 tile of `M`
/// by reading along its contiguous (outer) direction, a line at a time; the rows of the tile
/// are then computed from it. Gathering it row by row instead would keep `TILE` lines live
/// whose addresses differ by a multiple of 4 KB for power-of-two shapes, which share one L1
/// set and evict each other.
///
/// An input already of the computation type, contiguous along the outer dimension, is moved
/// into its tile with in-register block transposes (`transpose::transpose_into`: 16x16 /
/// 8x8 blocks with AVX-512, 8x8 / 4x4 with AVX2, for 4- and 8-byte elements), and the next
/// tile's rows of it are prefetched; the element-by-element copy with a strided scatter took
/// 2-3x as long as the rest of the add, more on 4 KB pages (see Note [Pointwise kernels at
/// bandwidth]).
///
/// Where no operand needs a cast and one input alone is transposed, [`fused_2d`] computes the
/// op straight from the transposed registers instead (no tile at all); this form is the
/// general one (casts, 1-, 2- and 16-byte or bool elements, several transposed inputs, the
/// DEFAULT capability).
///
/// `stream` (the output is larger than `STREAM_MIN_BYTES`) lets [`fused_2d`] write it with
/// non-temporal stores.
///
/// # Safety
/// As [`loop_2d`](super::loop_2d), with `s0`/`s1` the inner and outer byte strides.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn tiled_2d<I: Isa, M: Elem, R: Elem, const N: usize>(
    via: Option<ScalarType>,
    dts: &[ScalarType; MAX_OPERANDS],
    data: &[*mut u8],
    s0: &[isize; MAX_OPERANDS],
    s1: &[isize; MAX_OPERANDS],
    n0: usize,
    n1: usize,
    f: &impl OpN<M, R, N>,
    scratch: &mut Scratch<M, R, N>,
    stream: bool,
) {
    if let Some(t) = fused_input::<I, M, R, N>(via, dts, s0, s1) {
        // SAFETY (every arm): forwarded contract; `t` from `fused_input`, `K` the block side
        // of M under I. The side is a constant, so only its arm is instantiated (Note
        // [Kernel instantiations]).
        unsafe {
            match const { transpose::block_side::<I>(size_of::<M>()) } {
                16 => return fused_2d::<I, M, R, N, 16>(t, data, s0, s1, n0, n1, f, stream),
                8 => return fused_2d::<I, M, R, N, 8>(t, data, s0, s1, n0, n1, f, stream),
                4 => return fused_2d::<I, M, R, N, 4>(t, data, s0, s1, n0, n1, f, stream),
                _ => {}
            }
        }
    }
    const TT: usize = TILE * TILE;
    let nt = N + 1;
    let at = |k: usize, i: usize, j: usize| -> *mut u8 {
        data[k]
            .wrapping_offset(i as isize * s0[k])
            .wrapping_offset(j as isize * s1[k])
    };
    let (em, er) = (size_of::<M>() as isize, size_of::<R>() as isize);
    let in_place =
        |q: usize| M::KIND != Kind::Bool && via.is_none() && dts[q] == M::DTYPE && s0[q] == em;
    let out_in_place =
        dts[0] == R::DTYPE && s0[0] == er && (via.is_none() || R::KIND == Kind::Bool);
    let mut transposed = [false; N];
    for (k, t) in transposed.iter_mut().enumerate() {
        *t = is_transposed(s0, s1, k + 1);
    }
    // Transposed inputs already of the computation type, contiguous along the outer
    // dimension, whose tiles are moved as raw bits with vector transposes.
    let mut raw = [false; N];
    for (k, r) in raw.iter_mut().enumerate() {
        let q = k + 1;
        *r = transposed[k]
            && M::KIND != Kind::Bool
            && via.is_none()
            && dts[q] == M::DTYPE
            && s1[q] == em
            && transpose::has_vector_form::<I>(em as usize);
    }
    // One TILE x TILE tile of M per transposed input (heap: up to 3 x 64 KB for complex
    // doubles), allocated once per 2-D loop.
    let mut tiles: Vec<M> = if transposed.iter().any(|&t| t) {
        vec![M::default(); N * TT]
    } else {
        Vec::new()
    };
    let mut line = [M::default(); TILE];
    let mut p = [std::ptr::null_mut::<u8>(); MAX_OPERANDS];
    let mut j0 = 0;
    while j0 < n1 {
        let lj = TILE.min(n1 - j0);
        let mut i0 = 0;
        while i0 < n0 {
            let li = TILE.min(n0 - i0);
            for k in (0..N).filter(|&k| transposed[k]) {
                let q = k + 1;
                let tile = &mut tiles[k * TT..(k + 1) * TT];
                if raw[k] {
                    // SAFETY: li rows (s0 apart) of lj contiguous elements of M's dtype,
                    // inside the 2-D loop, into the tile's li x lj corner (rows TILE apart).
                    unsafe {
                        transpose::transpose_into::<I>(
                            em as usize,
                            at(q, i0, j0),
                            s0[q],
                            li,
                            lj,
                            tile.as_mut_ptr().cast(),
                            TILE * em as usize,
                        )
                    };
                    // The next tile's rows of this operand: each is a short run on its own
                    // page (4 KB pages on numpy's memory), which the hardware prefetchers
                    // do not fetch ahead.
                    if i0 + TILE < n0 {
                        let rows = TILE.min(n0 - i0 - TILE);
                        transpose::prefetch_rows(
                            at(q, i0 + TILE, j0),
                            s0[q],
                            rows,
                            lj * em as usize,
                        );
                    }
                    continue;
                }
                for ii in 0..li {
                    // SAFETY: lj elements along the outer dimension, inside the 2-D loop.
                    unsafe {
                        load_block::<I, M>(dts[q], at(q, i0 + ii, j0), s1[q], &mut line[..lj])
                    };
                    if let Some(v) = via {
                        if dts[q] != v {
                            round_via(v, &mut line[..lj]);
                        }
                    }
                    for (jj, x) in line[..lj].iter().enumerate() {
                        tile[jj * TILE + ii] = *x;
                    }
                }
            }
            for jj in 0..lj {
                for (k, pk) in p[..nt].iter_mut().enumerate() {
                    *pk = at(k, i0, j0 + jj);
                }
                let (mut ins, out) = scratch.get(BLOCK);
                let mut src = [std::ptr::null::<M>(); N];
                for (k, buf) in ins.iter_mut().enumerate() {
                    let q = k + 1;
                    if transposed[k] {
                        src[k] = tiles[k * TT + jj * TILE..].as_ptr();
                    } else if in_place(q) {
                        src[k] = p[q].cast_const().cast::<M>();
                    } else {
                        // SAFETY: li elements along the inner dimension, inside the loop.
                        unsafe { load_block::<I, M>(dts[q], p[q], s0[q], &mut buf[..li]) };
                        if let Some(v) = via {
                            if dts[q] != v {
                                round_via(v, &mut buf[..li]);
                            }
                        }
                        src[k] = buf.as_ptr();
                    }
                }
                if out_in_place {
                    // SAFETY: li elements of each operand (tile rows hold TILE).
                    unsafe { compute_run::<M, R, N>(&src, p[0].cast::<R>(), li, f) };
                } else {
                    // SAFETY: as above, into the buffer.
                    unsafe { compute_run::<M, R, N>(&src, out.as_mut_ptr(), li, f) };
                    if let Some(v) = via {
                        if dts[0] != v && R::KIND != Kind::Bool {
                            round_via(v, &mut out[..li]);
                        }
                    }
                    // SAFETY: as above, for the output.
                    unsafe { store_block::<I, R>(dts[0], p[0], s0[0], &out[..li]) };
                }
            }
            i0 += TILE;
        }
        j0 += lj;
    }
}
