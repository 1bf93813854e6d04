//! The `ratten-gen` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ratten_gen::check::{check, CheckOptions};

#[derive(Parser)]
#[command(
    name = "ratten-gen",
    version,
    about = "ratten's torchgen: checks PyTorch-format operator declarations"
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
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
