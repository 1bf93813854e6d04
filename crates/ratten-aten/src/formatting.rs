//! Printing tensors as torch prints them (torch/_tensor_str.py with the default print
//! options: precision 4, threshold 1000, edgeitems 3, linewidth 80).
//!
//! The layout logic works on [`PrintData`]: the values the printout shows (after
//! summarisation), in row-major order over the reduced sizes, plus which dims were cut. The
//! `Display` impl for `Tensor` gathers that from the tensor and hands it here, so the layout
//! can be tested against torch's text without building tensors.

use std::fmt::{self, Write as _};

use half::{bf16, f16};
use num_complex::Complex;
use ratten_core::access::TensorAccess;
use ratten_core::tensor_impl::TensorBase;
use ratten_core::{DeviceType, Error, Result, ScalarType};

use crate::Tensor;

/// torch's default `PRINT_OPTS`.
pub const PRECISION: usize = 4;
pub const THRESHOLD: usize = 1000;
pub const EDGEITEMS: usize = 3;
pub const LINEWIDTH: usize = 80;

/// The values of a tensor as the formatter sees them.
#[derive(Clone, Debug, PartialEq)]
pub enum PrintValues {
    /// Floating dtypes, widened to f64 as `.tolist()` does.
    Float(Vec<f64>),
    /// Complex dtypes as (real, imag).
    Complex(Vec<(f64, f64)>),
    /// Integer and bool dtypes, already as Python's `str()` of the value (`3`, `True`).
    Text(Vec<String>),
}

impl PrintValues {
    fn len(&self) -> usize {
        match self {
            PrintValues::Float(v) => v.len(),
            PrintValues::Complex(v) => v.len(),
            PrintValues::Text(v) => v.len(),
        }
    }
}

/// What the printout shows of a non-empty tensor: `sizes` are the reduced sizes (a cut dim keeps
/// its first and last `EDGEITEMS` entries), `cut[d]` says whether dim `d` was summarised.
#[derive(Clone, Debug, PartialEq)]
pub struct PrintData {
    pub sizes: Vec<usize>,
    pub cut: Vec<bool>,
    pub values: PrintValues,
}

/// For each dim of `sizes`, the indices the printout shows: all of them, or the edge items when
/// `summarize` and the dim is longer than `2 * EDGEITEMS` (torch's `get_summarized_data`).
pub fn shown_indices(sizes: &[usize], summarize: bool) -> (Vec<Vec<usize>>, Vec<bool>) {
    let mut idx = Vec::with_capacity(sizes.len());
    let mut cut = Vec::with_capacity(sizes.len());
    for &s in sizes {
        if summarize && s > 2 * EDGEITEMS {
            idx.push((0..EDGEITEMS).chain(s - EDGEITEMS..s).collect());
            cut.push(true);
        } else {
            idx.push((0..s).collect());
            cut.push(false);
        }
    }
    (idx, cut)
}

/// Calls `visit` with the element offset (in elements, from the storage start) of every shown
/// element, in row-major order; returns the reduced sizes and the cut flags.
pub fn for_each_shown_offset(
    sizes: &[i64],
    strides: &[i64],
    storage_offset: i64,
    mut visit: impl FnMut(i64),
) -> (Vec<usize>, Vec<bool>) {
    let usizes: Vec<usize> = sizes.iter().map(|&s| s.max(0) as usize).collect();
    let numel: usize = usizes.iter().product();
    let (idx, cut) = shown_indices(&usizes, numel > THRESHOLD);
    let reduced: Vec<usize> = idx.iter().map(|v| v.len()).collect();
    if reduced.contains(&0) {
        return (reduced, cut);
    }
    let ndim = sizes.len();
    let mut counter = vec![0usize; ndim];
    loop {
        let off: i64 = storage_offset
            + (0..ndim)
                .map(|d| idx[d][counter[d]] as i64 * strides[d])
                .sum::<i64>();
        visit(off);
        // Advance the row-major counter over the reduced index lists.
        let mut d = ndim;
        loop {
            if d == 0 {
                return (reduced, cut);
            }
            d -= 1;
            counter[d] += 1;
            if counter[d] < reduced[d] {
                break;
            }
            counter[d] = 0;
        }
    }
}

/// Python's `'{:.Nf}'.format(v)`.
pub fn format_fixed(v: f64, precision: usize) -> String {
    if v.is_nan() {
        "nan".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{v:.precision$}")
    }
}

/// Python's `'{:.Ne}'.format(v)`: the exponent has a sign and at least two digits.
pub fn format_sci(v: f64, precision: usize) -> String {
    if !v.is_finite() {
        return format_fixed(v, precision);
    }
    let s = format!("{v:.precision$e}");
    match s.split_once('e') {
        Some((mantissa, exp)) => {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

/// torch's `_Formatter`: decides int/fixed/scientific mode and the column width from the shown
/// values.
#[derive(Clone, Debug, PartialEq)]
pub struct Formatter {
    floating: bool,
    int_mode: bool,
    sci_mode: bool,
    max_width: usize,
}

impl Formatter {
    /// The formatter of a floating tensor's (shown) values.
    pub fn for_floats(values: &[f64]) -> Self {
        let mut f = Formatter {
            floating: true,
            int_mode: true,
            sci_mode: false,
            max_width: 1,
        };
        let nonzero_finite: Vec<f64> = values
            .iter()
            .copied()
            .filter(|v| v.is_finite() && *v != 0.0)
            .collect();
        if nonzero_finite.is_empty() {
            return f;
        }
        let abs = nonzero_finite.iter().map(|v| v.abs());
        let min = abs.clone().fold(f64::INFINITY, f64::min);
        let max = abs.fold(0.0f64, f64::max);
        f.int_mode = nonzero_finite.iter().all(|v| *v == v.ceil());
        let width_of = |g: &dyn Fn(f64) -> usize| nonzero_finite.iter().map(|&v| g(v)).max();
        if f.int_mode {
            if max / min > 1000.0 || max > 1.0e8 {
                f.sci_mode = true;
                f.max_width = f
                    .max_width
                    .max(width_of(&|v| format_sci(v, PRECISION).len()).unwrap_or(1));
            } else {
                f.max_width = f
                    .max_width
                    .max(width_of(&|v| format_fixed(v, 0).len() + 1).unwrap_or(1));
            }
        } else if max / min > 1000.0 || max > 1.0e8 || min < 1.0e-4 {
            f.sci_mode = true;
            f.max_width = f
                .max_width
                .max(width_of(&|v| format_sci(v, PRECISION).len()).unwrap_or(1));
        } else {
            f.max_width = f
                .max_width
                .max(width_of(&|v| format_fixed(v, PRECISION).len()).unwrap_or(1));
        }
        f
    }

    /// The formatter of an integer or bool tensor: the width of the longest `str()`.
    pub fn for_text(values: &[String]) -> Self {
        Formatter {
            floating: false,
            int_mode: true,
            sci_mode: false,
            max_width: values.iter().map(|s| s.len()).max().unwrap_or(1).max(1),
        }
    }

    pub fn width(&self) -> usize {
        self.max_width
    }

    fn pad(&self, s: String) -> String {
        if s.len() >= self.max_width {
            s
        } else {
            let mut out = " ".repeat(self.max_width - s.len());
            out.push_str(&s);
            out
        }
    }

    /// `_Formatter.format` for a floating value.
    pub fn format_float(&self, v: f64) -> String {
        let s = if self.sci_mode {
            format_sci(v, PRECISION)
        } else if self.int_mode {
            let mut s = format_fixed(v, 0);
            if v.is_finite() {
                s.push('.');
            }
            s
        } else {
            format_fixed(v, PRECISION)
        };
        self.pad(s)
    }

    /// `_Formatter.format` for an integer or bool value given as its `str()`.
    pub fn format_text(&self, s: &str) -> String {
        debug_assert!(!self.floating);
        self.pad(s.to_string())
    }
}

/// The element formatters of one printout: one for real values, two (real, imag) for complex.
struct Formatters<'a> {
    values: &'a PrintValues,
    f1: Formatter,
    f2: Option<Formatter>,
}

impl<'a> Formatters<'a> {
    fn new(values: &'a PrintValues) -> Self {
        match values {
            PrintValues::Float(v) => Formatters {
                values,
                f1: Formatter::for_floats(v),
                f2: None,
            },
            PrintValues::Text(v) => Formatters {
                values,
                f1: Formatter::for_text(v),
                f2: None,
            },
            PrintValues::Complex(v) => {
                let re: Vec<f64> = v.iter().map(|c| c.0).collect();
                let im: Vec<f64> = v.iter().map(|c| c.1).collect();
                Formatters {
                    values,
                    f1: Formatter::for_floats(&re),
                    f2: Some(Formatter::for_floats(&im)),
                }
            }
        }
    }

    /// `_val_formatter`: one element, padded to its column width.
    fn element(&self, i: usize) -> String {
        match self.values {
            PrintValues::Float(v) => self.f1.format_float(v[i]),
            PrintValues::Text(v) => self.f1.format_text(&v[i]),
            PrintValues::Complex(v) => {
                let f2 = self.f2.as_ref().unwrap_or(&self.f1);
                let real = self.f1.format_float(v[i].0);
                let mut imag = f2.format_float(v[i].1);
                imag.push('j');
                let imag = imag.trim_start();
                if imag.starts_with('+') || imag.starts_with('-') {
                    format!("{real}{imag}")
                } else {
                    format!("{real}+{imag}")
                }
            }
        }
    }

    /// `_vector_str`'s element length: width plus ", " (plus the imag part and `j`).
    fn element_length(&self) -> usize {
        self.f1.width() + 2 + self.f2.as_ref().map_or(0, |f| f.width() + 1)
    }
}

fn vector_str(fm: &Formatters<'_>, start: usize, len: usize, cut: bool, indent: usize) -> String {
    let per_line = if LINEWIDTH > indent {
        ((LINEWIDTH - indent) / fm.element_length()).max(1)
    } else {
        1
    };
    let mut data: Vec<String> = Vec::with_capacity(len + 1);
    for i in 0..len {
        if cut && i == EDGEITEMS {
            data.push(" ...".to_string());
        }
        data.push(fm.element(start + i));
    }
    let lines: Vec<String> = data.chunks(per_line).map(|c| c.join(", ")).collect();
    let sep = format!(",\n{}", " ".repeat(indent + 1));
    format!("[{}]", lines.join(&sep))
}

fn tensor_str_rec(
    fm: &Formatters<'_>,
    data: &PrintData,
    dim: usize,
    start: usize,
    indent: usize,
) -> String {
    let ndim = data.sizes.len();
    let rest = ndim - dim;
    if rest == 1 {
        return vector_str(fm, start, data.sizes[dim], data.cut[dim], indent);
    }
    let inner: usize = data.sizes[dim + 1..].iter().product();
    let mut slices = Vec::with_capacity(data.sizes[dim] + 1);
    for i in 0..data.sizes[dim] {
        if data.cut[dim] && i == EDGEITEMS {
            slices.push("...".to_string());
        }
        slices.push(tensor_str_rec(
            fm,
            data,
            dim + 1,
            start + i * inner,
            indent + 1,
        ));
    }
    let sep = format!(",{}{}", "\n".repeat(rest - 1), " ".repeat(indent + 1));
    format!("[{}]", slices.join(&sep))
}

/// `_tensor_str` for a non-empty tensor: the bracketed body, `indent` being the column where the
/// first `[` sits.
pub fn tensor_str(data: &PrintData, indent: usize) -> String {
    let fm = Formatters::new(&data.values);
    debug_assert_eq!(data.values.len(), data.sizes.iter().product::<usize>());
    if data.sizes.is_empty() {
        // `_scalar_str`
        return fm.element(0);
    }
    tensor_str_rec(&fm, data, 0, 0, indent)
}

/// Python's `str(tuple(shape))`: `(2, 3)`, `(3,)`, `()`.
pub fn shape_tuple(sizes: &[i64]) -> String {
    match sizes {
        [] => "()".to_string(),
        [s] => format!("({s},)"),
        _ => {
            let items: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
            format!("({})", items.join(", "))
        }
    }
}

/// `_add_suffixes`: appends `, suffix` pieces, wrapping to a new line past `LINEWIDTH`.
pub fn add_suffixes(tensor_str: &str, suffixes: &[String], indent: usize) -> String {
    let mut out = String::from(tensor_str);
    // len(s) - s.rfind("\n") + 1, with rfind giving -1 when there is no newline.
    let mut last_line_len = match tensor_str.rfind('\n') {
        Some(p) => tensor_str.len() - p + 1,
        None => tensor_str.len() + 2,
    };
    for suffix in suffixes {
        if last_line_len + suffix.len() + 2 > LINEWIDTH {
            let _ = write!(out, ",\n{}{}", " ".repeat(indent), suffix);
            last_line_len = indent + suffix.len();
        } else {
            let _ = write!(out, ", {suffix}");
            last_line_len += suffix.len() + 2;
        }
    }
    out.push(')');
    out
}

/// What `_str_intern` needs to know about a plain strided tensor besides its values.
#[derive(Clone, Debug)]
pub struct ReprMeta<'a> {
    pub sizes: &'a [i64],
    /// `torch.int32`-style dtype name without `torch.` (`int32`).
    pub dtype_name: &'a str,
    /// Whether the dtype needs no suffix (float32, complex64, int64, bool).
    pub has_default_dtype: bool,
    /// Whether the dtype is the default float dtype (float32): empty and meta tensors print
    /// every other dtype.
    pub is_default_float: bool,
    /// `str(device)` when it is not the CPU.
    pub device: Option<String>,
    pub is_meta: bool,
}

/// `_str_intern` for a plain tensor: prefix, body and suffixes. `data` is `None` for meta and
/// empty tensors.
pub fn repr(meta: &ReprMeta<'_>, data: Option<&PrintData>) -> String {
    const PREFIX: &str = "tensor(";
    let indent = PREFIX.len();
    let mut suffixes = Vec::new();
    if let Some(dev) = &meta.device {
        suffixes.push(format!("device='{dev}'"));
    }
    let numel: i64 = meta.sizes.iter().product();
    let body = if meta.is_meta {
        suffixes.push(format!("size={}", shape_tuple(meta.sizes)));
        if !meta.is_default_float {
            suffixes.push(format!("dtype=torch.{}", meta.dtype_name));
        }
        "...".to_string()
    } else if numel == 0 || data.is_none() {
        if meta.sizes.len() != 1 {
            suffixes.push(format!("size={}", shape_tuple(meta.sizes)));
        }
        if !meta.is_default_float {
            suffixes.push(format!("dtype=torch.{}", meta.dtype_name));
        }
        "[]".to_string()
    } else {
        if !meta.has_default_dtype {
            suffixes.push(format!("dtype=torch.{}", meta.dtype_name));
        }
        match data {
            Some(d) => tensor_str(d, indent),
            None => "[]".to_string(),
        }
    };
    add_suffixes(&format!("{PREFIX}{body}"), &suffixes, indent)
}

/// Converts one element to what the formatter needs.
trait PrintElement: Copy {
    fn push(self, out: &mut PrintValues);
}

macro_rules! print_float {
    ($($t:ty),*) => {$(
        impl PrintElement for $t {
            fn push(self, out: &mut PrintValues) {
                if let PrintValues::Float(v) = out {
                    v.push(f64::from(self));
                }
            }
        }
    )*};
}
print_float!(f32, f64, f16, bf16);

macro_rules! print_complex {
    ($($t:ty),*) => {$(
        impl PrintElement for Complex<$t> {
            fn push(self, out: &mut PrintValues) {
                if let PrintValues::Complex(v) = out {
                    v.push((f64::from(self.re), f64::from(self.im)));
                }
            }
        }
    )*};
}
print_complex!(f16, f32, f64);

macro_rules! print_int {
    ($($t:ty),*) => {$(
        impl PrintElement for $t {
            fn push(self, out: &mut PrintValues) {
                if let PrintValues::Text(v) = out {
                    v.push(self.to_string());
                }
            }
        }
    )*};
}
print_int!(u8, i8, i16, i32, i64, u16, u32, u64);

/// A `bool` element, read as its byte: storage bytes are not guaranteed to be 0 or 1.
#[derive(Clone, Copy)]
struct BoolByte(u8);

impl PrintElement for BoolByte {
    fn push(self, out: &mut PrintValues) {
        if let PrintValues::Text(v) = out {
            v.push(if self.0 != 0 { "True" } else { "False" }.to_string());
        }
    }
}

/// Reads the shown elements of a non-empty CPU tensor into `out`.
fn gather<T: PrintElement>(t: &TensorBase, mut out: PrintValues) -> Result<PrintData> {
    let g = TensorAccess::read(t)?;
    let a = g.input(0)?;
    let Some(p) = a.raw_data_ptr() else {
        return Err(Error::runtime(format!(
            "Cannot access data pointer of Tensor that doesn't have storage (device {})",
            t.device()
        )));
    };
    let p = p.as_ptr() as *const T;
    let (sizes, cut) = for_each_shown_offset(a.sizes(), a.strides(), 0, |off| {
        // SAFETY: `off` is sum(index[d] * strides[d]) for an index inside the tensor's sizes,
        // relative to the element at the storage offset: an element of the view, which was
        // bounds-checked against its storage, read under the guard's shared lock. `T` has the
        // size and alignment of the dtype's element (BoolByte for bool).
        let v = unsafe { std::ptr::read(p.offset(off as isize)) };
        v.push(&mut out);
    });
    Ok(PrintData {
        sizes,
        cut,
        values: out,
    })
}

/// The values the printout of `t` shows (`None` for meta and empty tensors).
pub fn print_data(t: &TensorBase) -> Result<Option<PrintData>> {
    if t.is_meta() || t.numel() == 0 {
        return Ok(None);
    }
    let float = || PrintValues::Float(Vec::new());
    let complex = || PrintValues::Complex(Vec::new());
    let text = || PrintValues::Text(Vec::new());
    let d = match t.dtype() {
        ScalarType::Float => gather::<f32>(t, float()),
        ScalarType::Double => gather::<f64>(t, float()),
        ScalarType::Half => gather::<f16>(t, float()),
        ScalarType::BFloat16 => gather::<bf16>(t, float()),
        ScalarType::ComplexHalf => gather::<Complex<f16>>(t, complex()),
        ScalarType::ComplexFloat => gather::<Complex<f32>>(t, complex()),
        ScalarType::ComplexDouble => gather::<Complex<f64>>(t, complex()),
        ScalarType::Byte => gather::<u8>(t, text()),
        ScalarType::Char => gather::<i8>(t, text()),
        ScalarType::Short => gather::<i16>(t, text()),
        ScalarType::Int => gather::<i32>(t, text()),
        ScalarType::Long => gather::<i64>(t, text()),
        ScalarType::UInt16 => gather::<u16>(t, text()),
        ScalarType::UInt32 => gather::<u32>(t, text()),
        ScalarType::UInt64 => gather::<u64>(t, text()),
        ScalarType::Bool => gather::<BoolByte>(t, text()),
    }?;
    Ok(Some(d))
}

/// torch's `repr(t)` for a plain tensor.
pub fn tensor_repr(t: &TensorBase) -> Result<String> {
    let dtype = t.dtype();
    let sizes = t.sizes();
    let device = t.device();
    let meta = ReprMeta {
        sizes: &sizes,
        dtype_name: dtype.python_name(),
        has_default_dtype: matches!(
            dtype,
            ScalarType::Float | ScalarType::ComplexFloat | ScalarType::Long | ScalarType::Bool
        ),
        is_default_float: dtype == ScalarType::Float,
        device: (device.device_type != DeviceType::Cpu).then(|| device.to_string()),
        is_meta: t.is_meta(),
    };
    let data = print_data(t)?;
    Ok(repr(&meta, data.as_ref()))
}

impl fmt::Display for Tensor {
    /// torch's `repr`. A tensor whose storage this thread holds for writing cannot be read; it
    /// prints the reason inside `tensor(<...>)` instead of failing the formatter.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match tensor_repr(self.base()) {
            Ok(s) => f.write_str(&s),
            Err(e) => write!(f, "tensor(<unreadable: {e}>)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floats(sizes: &[usize], v: Vec<f64>) -> PrintData {
        PrintData {
            sizes: sizes.to_vec(),
            cut: vec![false; sizes.len()],
            values: PrintValues::Float(v),
        }
    }

    #[test]
    fn python_number_formats() {
        assert_eq!(format_sci(123456.0, 4), "1.2346e+05");
        assert_eq!(format_sci(-1e-5, 4), "-1.0000e-05");
        assert_eq!(format_sci(1e100, 4), "1.0000e+100");
        assert_eq!(format_fixed(f64::NAN, 4), "nan");
        assert_eq!(format_fixed(f64::NEG_INFINITY, 0), "-inf");
        assert_eq!(format_fixed(0.125, 2), "0.12");
        assert_eq!(format_fixed(2.5, 0), "2");
    }

    #[test]
    fn formatter_modes() {
        let f = Formatter::for_floats(&[1.0, 2.0, 10.0]);
        assert_eq!((f.int_mode, f.sci_mode, f.max_width), (true, false, 3));
        assert_eq!(f.format_float(1.0), " 1.");
        let f = Formatter::for_floats(&[1.5, -2.25]);
        assert_eq!(f.format_float(1.5), " 1.5000");
        let f = Formatter::for_floats(&[1e-5, 1.0]);
        assert!(f.sci_mode);
        assert_eq!(f.format_float(1.0), "1.0000e+00");
        let f = Formatter::for_floats(&[0.0, f64::NAN]);
        assert_eq!(f.format_float(0.0), "0.");
        assert_eq!(f.format_float(f64::NAN), "nan");
    }

    #[test]
    fn layout_of_a_matrix() {
        let d = floats(&[2, 2], vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(tensor_str(&d, 7), "[[1., 2.],\n        [3., 4.]]");
    }

    #[test]
    fn suffix_wraps_past_the_line_width() {
        let long = format!("tensor([{}]", "1".repeat(70));
        let s = add_suffixes(&long, &["dtype=torch.int32".to_string()], 7);
        assert_eq!(s, format!("{long},\n       dtype=torch.int32)"));
    }

    #[test]
    fn shown_offsets_summarise() {
        let mut offs = Vec::new();
        let (reduced, cut) = for_each_shown_offset(&[2000], &[1], 5, |o| offs.push(o));
        assert_eq!(reduced, vec![6]);
        assert_eq!(cut, vec![true]);
        assert_eq!(offs, vec![5, 6, 7, 2002, 2003, 2004]);
        let mut offs = Vec::new();
        for_each_shown_offset(&[2, 2], &[1, 2], 0, |o| offs.push(o));
        assert_eq!(offs, vec![0, 2, 1, 3]);
    }
}
