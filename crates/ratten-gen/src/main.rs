//! The `ratten-gen` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ratten_gen::check::{check, CheckOptions};

#[derive(Parser)]
#[command(
    name = "ratten-gen",
    version,
    about = "ratten's torchgen: checks PyTorch-format operator declarations and generates code"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Load and validate native_functions.yaml (and tags.yaml, derivatives.yaml), round-trip
    /// every schema and print the counts. Exits non-zero on any error.
    Check {
        /// native_functions.yaml
        #[arg(long, value_name = "PATH")]
        native: PathBuf,
        /// tags.yaml: the tags native functions may carry (unchecked when absent)
        #[arg(long, value_name = "PATH")]
        tags: Option<PathBuf>,
        /// derivatives.yaml: checked and matched to the native functions
        #[arg(long, value_name = "PATH")]
        derivatives: Option<PathBuf>,
    },
    /// Generate the operator API (handles, functions, methods, backend functions, structured
    /// wrappers, registrations) from a native_functions.yaml into a directory of Rust files.
    Generate {
        /// native_functions.yaml
        #[arg(long, value_name = "PATH")]
        native: PathBuf,
        /// tags.yaml (unchecked when absent)
        #[arg(long, value_name = "PATH")]
        tags: Option<PathBuf>,
        /// derivatives.yaml: the differentiability information of the model
        #[arg(long, value_name = "PATH")]
        derivatives: Option<PathBuf>,
        /// The directory the files are written to (e.g. src/generated)
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// ratten-aten's own code (inherent Tensor methods, `crate` paths)
        #[arg(long)]
        aten: bool,
        /// The module holding the kernels the yaml names (out of tree)
        #[arg(long, default_value = "crate::kernels")]
        kernel_module: String,
        /// The extension trait carrying the Tensor methods (out of tree)
        #[arg(long, default_value = "TensorExt")]
        extension_trait: String,
        /// `structured_inherits` base=RustType, repeatable
        #[arg(long, value_name = "BASE=TYPE")]
        inherits: Vec<String>,
        /// Only check that the files in --out are up to date (exit 1 if not)
        #[arg(long)]
        check: bool,
        /// Generate ratten-py's Python bindings (signatures.rs, dispatch/) instead
        #[arg(long)]
        python: bool,
        /// Generate ratten-autograd's code (backward nodes, Autograd and ADInplaceOrView
        /// kernels, registration) from --native and --derivatives instead
        #[arg(long)]
        autograd: bool,
        /// With --autograd: the FunctionsManual source (default: functions_manual.rs beside
        /// --out)
        #[arg(long, value_name = "PATH")]
        functions_manual: Option<PathBuf>,
        /// With --autograd: ratten-aten's native_functions.yaml. Generates an out-of-tree
        /// library's autograd code (its --native and --derivatives) whose formulas call
        /// ratten-aten's operators and its own
        #[arg(long, value_name = "PATH")]
        aten_native: Option<PathBuf>,
        /// Out of tree: the module of the library's operator handles
        #[arg(long, default_value = "crate::generated::operators")]
        operators: String,
        /// Out of tree: the function the operator handles call to keep the registrations
        /// linked (default: the generated registration's), e.g. a library's
        /// `crate::ensure_linked` that also links its autograd kernels
        #[arg(long, value_name = "PATH")]
        ensure_linked: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Generate {
            native,
            tags,
            derivatives,
            out,
            aten,
            kernel_module,
            extension_trait,
            inherits,
            check,
            python,
            autograd,
            functions_manual,
            aten_native,
            operators,
            ensure_linked,
        } => generate(GenerateArgs {
            native,
            tags,
            derivatives,
            out,
            aten,
            kernel_module,
            extension_trait,
            inherits,
            check,
            python,
            autograd,
            functions_manual,
            aten_native,
            operators,
            ensure_linked,
        }),
        Command::Check {
            native,
            tags,
            derivatives,
        } => {
            let opts = CheckOptions {
                native,
                tags,
                derivatives,
            };
            match check(&opts) {
                Ok(report) => {
                    print!("{report}");
                    println!("OK");
                    ExitCode::SUCCESS
                }
                Err(failure) => {
                    eprintln!("{failure}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

struct GenerateArgs {
    native: PathBuf,
    tags: Option<PathBuf>,
    derivatives: Option<PathBuf>,
    out: PathBuf,
    aten: bool,
    kernel_module: String,
    extension_trait: String,
    inherits: Vec<String>,
    check: bool,
    python: bool,
    autograd: bool,
    functions_manual: Option<PathBuf>,
    aten_native: Option<PathBuf>,
    operators: String,
    ensure_linked: Option<String>,
}

fn generate(a: GenerateArgs) -> ExitCode {
    use ratten_gen::codegen::{
        generate_from_path, generate_python_from_path, stale_files, write_files, GenOptions,
    };
    let mut opts = match (a.autograd, &a.aten_native) {
        (true, Some(aten_native)) => {
            let Some(manual) = a.functions_manual.clone() else {
                eprintln!("--aten-native needs --functions-manual (ratten-autograd's)");
                return ExitCode::FAILURE;
            };
            let Some(derivatives) = &a.derivatives else {
                eprintln!("--aten-native needs --derivatives (the library's)");
                return ExitCode::FAILURE;
            };
            let mut o = GenOptions::out_of_tree_autograd("", manual, aten_native.clone());
            o.operators = a.operators.clone();
            o.source_label = format!("{} and {}", a.native.display(), derivatives.display());
            o
        }
        (true, None) => {
            // ratten-autograd's FunctionsManual sits beside its generated tree.
            let manual = a
                .functions_manual
                .clone()
                .unwrap_or_else(|| a.out.join("../functions_manual.rs"));
            GenOptions::autograd(Some(manual))
        }
        (false, _) if a.aten => GenOptions::aten(),
        (false, _) => {
            let mut o = GenOptions::out_of_tree("", &a.kernel_module, &a.extension_trait);
            o.source_label = a.native.display().to_string();
            o.ensure_linked = a.ensure_linked.clone();
            o
        }
    };
    for kv in &a.inherits {
        let Some((k, v)) = kv.split_once('=') else {
            eprintln!("--inherits expects BASE=TYPE, got {kv}");
            return ExitCode::FAILURE;
        };
        opts.inherits.insert(k.to_string(), v.to_string());
    }
    let generated = if a.python {
        generate_python_from_path(&a.native, a.tags.as_deref())
    } else {
        generate_from_path(
            &a.native,
            a.tags.as_deref(),
            a.derivatives.as_deref(),
            &opts,
        )
    };
    let files = match generated {
        Ok(f) => f,
        Err(errors) => {
            for e in errors {
                eprintln!("error: {e}");
            }
            return ExitCode::FAILURE;
        }
    };
    if a.check {
        let stale = stale_files(&files, &a.out);
        if stale.is_empty() {
            println!("{} files up to date in {}", files.len(), a.out.display());
            return ExitCode::SUCCESS;
        }
        eprintln!(
            "stale generated files in {}: {}",
            a.out.display(),
            stale.join(", ")
        );
        return ExitCode::FAILURE;
    }
    match write_files(&files, &a.out) {
        Ok(paths) => {
            for p in paths {
                println!("wrote {}", p.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cannot write to {}: {e}", a.out.display());
            ExitCode::FAILURE
        }
    }
}
