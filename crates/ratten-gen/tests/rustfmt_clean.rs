//! The checked-in generated trees are rustfmt-clean (Note [Generated code is rustfmt-clean]
//! in codegen/writer.rs): the emitters write rustfmt's layout themselves, so that `cargo fmt
//! --check` passes without a formatter in the generator. Skipped where rustfmt is absent.

use std::path::Path;
use std::process::Command;

#[test]
fn generated_trees_are_rustfmt_clean() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if Command::new("rustfmt").arg("--version").output().is_err() {
        eprintln!("skipped: rustfmt is not installed");
        return;
    }
    for tree in [
        "crates/ratten-aten/src/generated/mod.rs",
        "crates/ratten-py/src/generated/mod.rs",
        "examples/myops/src/generated/mod.rs",
    ] {
        let out = Command::new("rustfmt")
            .args(["--edition", "2021", "--check"])
            .arg(root.join(tree))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{tree} is not rustfmt-clean:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}
