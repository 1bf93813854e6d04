//! The C++-level types of the values in derivatives.yaml's formulas ([`CxxType`]) and their
//! Rust forms in backward code (the autograd contract's table of values): an owned form
//! (locals, saved fields, what a call returns) and a borrowed form (what operator handles
//! and FunctionsManual helpers take).

use std::fmt;

use ratten_schema::Type;

/// The type of a formula's value, as C++ sees it (after torchgen's SymInt erasure: `SymInt`
/// is `Int`, `SymInt[]` is `IntList`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CxxType {
    /// A defined tensor.
    Tensor,
    /// A tensor that may be undefined (`Tensor?`, a gradient of a multi-output function).
    OptTensor,
    TensorList,
    /// `Tensor?[]`, `variable_list` (`grads`).
    OptTensorList,
    IntList,
    OptIntList,
    Int,
    OptInt,
    Float,
    OptFloat,
    Bool,
    OptBool,
    /// `std::array<bool, N>` (`grad_input_mask`), `bool[]`.
    BoolList,
    FloatList,
    Complex,
    Scalar,
    OptScalar,
    ScalarType,
    OptScalarType,
    String,
    OptString,
    TensorOptions,
    MemoryFormat,
    OptMemoryFormat,
    Layout,
    OptLayout,
    Device,
    OptDevice,
    Generator,
    OptGenerator,
    /// `std::vector<ScalarType>` (`to_args_scalartypes(tensors)`).
    ScalarTypeList,
    /// `std::vector<std::vector<int64_t>>` (`to_args_sizes(tensors)`).
    IntListList,
    /// `TensorGeometry` (`TensorGeometry(self)`: a tensor's sizes, strides and offset).
    TensorGeometry,
    /// `std::tuple<...>`.
    Tuple(Vec<CxxType>),
    /// `std::nullopt`, `c10::nullopt`: converts to every optional.
    Nullopt,
}

impl CxxType {
    /// The optional of a type, where C++ has one in formulas.
    pub fn optional(&self) -> Option<CxxType> {
        use CxxType::*;
        Some(match self {
            Tensor | OptTensor => OptTensor,
            IntList | OptIntList => OptIntList,
            Int | OptInt => OptInt,
            Float | OptFloat => OptFloat,
            Bool | OptBool => OptBool,
            Scalar | OptScalar => OptScalar,
            ScalarType | OptScalarType => OptScalarType,
            String | OptString => OptString,
            MemoryFormat | OptMemoryFormat => OptMemoryFormat,
            Layout | OptLayout => OptLayout,
            Device | OptDevice => OptDevice,
            Generator | OptGenerator => OptGenerator,
            _ => return None,
        })
    }

    /// The type inside an optional.
    pub fn unwrapped(&self) -> Option<CxxType> {
        use CxxType::*;
        Some(match self {
            OptTensor => Tensor,
            OptIntList => IntList,
            OptInt => Int,
            OptFloat => Float,
            OptBool => Bool,
            OptScalar => Scalar,
            OptScalarType => ScalarType,
            OptString => String,
            OptMemoryFormat => MemoryFormat,
            OptLayout => Layout,
            OptDevice => Device,
            OptGenerator => Generator,
            _ => return None,
        })
    }

    pub fn is_optional(&self) -> bool {
        self.unwrapped().is_some()
    }

    /// Whether values are passed by value (Rust `Copy`) in both forms.
    pub fn is_copy(&self) -> bool {
        use CxxType::*;
        match self {
            Int | OptInt | Float | OptFloat | Bool | OptBool | Complex | ScalarType
            | OptScalarType | MemoryFormat | OptMemoryFormat | Layout | OptLayout | Device
            | OptDevice | Nullopt => true,
            Tuple(ts) => ts.iter().all(CxxType::is_copy),
            _ => false,
        }
    }

    /// The owned Rust type; `aten` names ratten-aten in the generated code.
    pub fn owned_rust(&self, aten: &str) -> String {
        use CxxType::*;
        let opt = |t: &CxxType| format!("Option<{}>", t.owned_rust(aten));
        match self {
            Tensor => "Tensor".into(),
            TensorList => "Vec<Tensor>".into(),
            OptTensorList => "Vec<Option<Tensor>>".into(),
            IntList => "Vec<i64>".into(),
            Int => "i64".into(),
            Float => "f64".into(),
            Bool => "bool".into(),
            BoolList => "Vec<bool>".into(),
            FloatList => "Vec<f64>".into(),
            Complex => "num_complex::Complex64".into(),
            Scalar => "Scalar".into(),
            ScalarType => "ScalarType".into(),
            String => "String".into(),
            TensorOptions => "TensorOptions".into(),
            MemoryFormat => format!("{aten}::native::MemoryFormat"),
            Layout => format!("{aten}::native::Layout"),
            Device => "Device".into(),
            Generator => format!("{aten}::random::Generator"),
            ScalarTypeList => "Vec<ScalarType>".into(),
            IntListList => "Vec<Vec<i64>>".into(),
            TensorGeometry => "TensorGeometry".into(),
            Tuple(ts) => format!(
                "({})",
                ts.iter()
                    .map(|t| t.owned_rust(aten))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Nullopt => "Option<()>".into(),
            t => opt(&t.unwrapped().expect("the remaining types are optionals")),
        }
    }

    /// The borrowed Rust type (what helpers and operator handles take).
    pub fn borrowed_rust(&self, aten: &str) -> String {
        use CxxType::*;
        match self {
            Tensor => "&Tensor".into(),
            OptTensor => "Option<&Tensor>".into(),
            TensorList => "&[Tensor]".into(),
            OptTensorList => "&[Option<Tensor>]".into(),
            IntList => "&[i64]".into(),
            OptIntList => "Option<&[i64]>".into(),
            BoolList => "&[bool]".into(),
            FloatList => "&[f64]".into(),
            Scalar => "&Scalar".into(),
            OptScalar => "Option<&Scalar>".into(),
            String => "&str".into(),
            OptString => "Option<&str>".into(),
            TensorOptions => "&TensorOptions".into(),
            Generator => format!("&{aten}::random::Generator"),
            OptGenerator => format!("Option<&{aten}::random::Generator>"),
            ScalarTypeList => "&[ScalarType]".into(),
            IntListList => "&[Vec<i64>]".into(),
            TensorGeometry => "&TensorGeometry".into(),
            t => t.owned_rust(aten),
        }
    }

    /// The type of a schema argument type (torchgen's C++ argument types, SymInt erased).
    pub fn of_schema(ty: &Type) -> Option<CxxType> {
        use CxxType as C;
        Some(match ty {
            Type::Tensor => C::Tensor,
            Type::Int | Type::SymInt | Type::DeviceIndex => C::Int,
            Type::Float | Type::SymFloat => C::Float,
            Type::Bool | Type::SymBool => C::Bool,
            Type::Complex => C::Complex,
            Type::Str => C::String,
            Type::Scalar => C::Scalar,
            Type::ScalarType => C::ScalarType,
            Type::Device => C::Device,
            Type::Layout => C::Layout,
            Type::MemoryFormat => C::MemoryFormat,
            Type::Generator => C::Generator,
            Type::List { elem, .. } => match &**elem {
                Type::Tensor => C::TensorList,
                Type::Optional(t) if **t == Type::Tensor => C::OptTensorList,
                Type::Int | Type::SymInt => C::IntList,
                Type::Bool => C::BoolList,
                Type::Float => C::FloatList,
                _ => return None,
            },
            Type::Optional(inner) => match &**inner {
                Type::List { elem, .. } if matches!(**elem, Type::Int | Type::SymInt) => {
                    C::OptIntList
                }
                Type::List { .. } | Type::Optional(_) => return None,
                t => C::of_schema(t)?.optional()?,
            },
            _ => return None,
        })
    }

    /// The type of a helper's Rust parameter (the contract's closed set, plus the lists
    /// torchgen's saved values need).
    pub fn of_param(rust: &str) -> Option<CxxType> {
        use CxxType::*;
        let compact: std::string::String = rust.chars().filter(|c| !c.is_whitespace()).collect();
        Some(match compact.as_str() {
            "&Tensor" => Tensor,
            "Option<&Tensor>" => OptTensor,
            "&[Tensor]" => TensorList,
            "&[Option<Tensor>]" => OptTensorList,
            "&[i64]" => IntList,
            "Option<&[i64]>" => OptIntList,
            "i64" => Int,
            "Option<i64>" => OptInt,
            "f64" => Float,
            "Option<f64>" => OptFloat,
            "bool" => Bool,
            "Option<bool>" => OptBool,
            "&[bool]" => BoolList,
            "&[f64]" => FloatList,
            "&Scalar" => Scalar,
            "Option<&Scalar>" => OptScalar,
            "ScalarType" => ScalarType,
            "Option<ScalarType>" => OptScalarType,
            "&str" => String,
            "Option<&str>" => OptString,
            "&TensorOptions" | "TensorOptions" => TensorOptions,
            "Layout" => Layout,
            "MemoryFormat" => MemoryFormat,
            "Option<MemoryFormat>" => OptMemoryFormat,
            "Device" => Device,
            "&[ScalarType]" => ScalarTypeList,
            "&[Vec<i64>]" => IntListList,
            "&TensorGeometry" => TensorGeometry,
            _ => return None,
        })
    }

    /// The type of a helper's Rust return (`T` of `Result<T>`).
    pub fn of_return(rust: &str) -> Option<CxxType> {
        use CxxType::*;
        let compact: std::string::String = rust.chars().filter(|c| !c.is_whitespace()).collect();
        if let Some(inner) = compact.strip_prefix('(').and_then(|s| s.strip_suffix(')')) {
            let parts = split_top_level(inner);
            return parts
                .iter()
                .map(|p| CxxType::of_return(p))
                .collect::<Option<Vec<_>>>()
                .filter(|ts| ts.len() >= 2)
                .map(Tuple);
        }
        Some(match compact.as_str() {
            "Tensor" => Tensor,
            "Option<Tensor>" => OptTensor,
            "Vec<Tensor>" => TensorList,
            "Vec<Option<Tensor>>" => OptTensorList,
            "i64" => Int,
            "f64" => Float,
            "bool" => Bool,
            "Vec<i64>" => IntList,
            "Scalar" => Scalar,
            "ScalarType" => ScalarType,
            _ => return None,
        })
    }
}

/// Splits `a, B<c, d>, e` at its top-level commas.
pub(crate) fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = s[start..].trim();
    if !last.is_empty() {
        out.push(last);
    }
    out
}

impl fmt::Display for CxxType {
    /// The C++ spelling, for messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use CxxType::*;
        let s = match self {
            Tensor => "Tensor",
            OptTensor => "optional<Tensor>",
            TensorList => "TensorList",
            OptTensorList => "List<optional<Tensor>>",
            IntList => "IntArrayRef",
            OptIntList => "OptionalIntArrayRef",
            Int => "int64_t",
            OptInt => "optional<int64_t>",
            Float => "double",
            OptFloat => "optional<double>",
            Bool => "bool",
            OptBool => "optional<bool>",
            BoolList => "array<bool>",
            FloatList => "ArrayRef<double>",
            Complex => "complex<double>",
            Scalar => "Scalar",
            OptScalar => "optional<Scalar>",
            ScalarType => "ScalarType",
            OptScalarType => "optional<ScalarType>",
            String => "string_view",
            OptString => "optional<string_view>",
            TensorOptions => "TensorOptions",
            MemoryFormat => "MemoryFormat",
            OptMemoryFormat => "optional<MemoryFormat>",
            Layout => "Layout",
            OptLayout => "optional<Layout>",
            Device => "Device",
            OptDevice => "optional<Device>",
            Generator => "Generator",
            OptGenerator => "optional<Generator>",
            ScalarTypeList => "vector<ScalarType>",
            IntListList => "vector<vector<int64_t>>",
            TensorGeometry => "TensorGeometry",
            Nullopt => "nullopt_t",
            Tuple(ts) => {
                f.write_str("tuple<")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                return f.write_str(">");
            }
        };
        f.write_str(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_follow_the_contract() {
        assert_eq!(
            CxxType::OptIntList.owned_rust("ratten_aten"),
            "Option<Vec<i64>>"
        );
        assert_eq!(
            CxxType::OptIntList.borrowed_rust("ratten_aten"),
            "Option<&[i64]>"
        );
        assert_eq!(CxxType::Scalar.borrowed_rust("x"), "&Scalar");
        assert_eq!(
            CxxType::Tuple(vec![CxxType::Tensor, CxxType::OptTensor]).owned_rust("x"),
            "(Tensor, Option<Tensor>)"
        );
        assert_eq!(
            CxxType::of_param("Option<&[i64]>"),
            Some(CxxType::OptIntList)
        );
        assert_eq!(
            CxxType::of_return("(Option<Tensor>, Option<Tensor>)"),
            Some(CxxType::Tuple(vec![CxxType::OptTensor, CxxType::OptTensor]))
        );
        assert_eq!(CxxType::of_return("HashMap<u8, u8>"), None);
        assert_eq!(
            CxxType::Tuple(vec![CxxType::Tensor]).to_string(),
            "tuple<Tensor>"
        );
    }
}
