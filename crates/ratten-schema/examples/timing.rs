//! Times one load of PyTorch's files (what the criterion bench measures), phase by phase.
use std::path::Path;
use std::time::Instant;
fn main() {
    let dir = std::env::var_os("RATTEN_PYTORCH_DIR").map_or_else(
        || {
            Path::new(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../../shared/pytorch"
            ))
            .to_path_buf()
        },
        Into::into,
    );
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    for _ in 0..reps {
        let t = Instant::now();
        let tags = ratten_schema::tags::Tags::load(&dir.join("tags.yaml")).unwrap();
        let nf = ratten_schema::native::NativeFunctions::load(
            &dir.join("native_functions.yaml"),
            Some(&tags),
        )
        .unwrap();
        let t1 = t.elapsed();
        let d =
            ratten_schema::derivatives::Derivatives::load(&dir.join("derivatives.yaml")).unwrap();
        let t2 = t.elapsed();
        let m = d.match_native(&nf);
        let t3 = t.elapsed();
        println!(
            "native {t1:?}  +derivatives {:?}  +match {:?}  total {t3:?} ({} matched)",
            t2 - t1,
            t3 - t2,
            m.matched.len()
        );
    }
}
