//! Anomaly mode (torch/csrc/autograd/anomaly_mode.h): nodes made while it is on keep a trace of
//! the forward call that made them; a backward error names that node and shows the trace, and
//! a gradient with NaN is an error.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;

static ENABLED: AtomicBool = AtomicBool::new(false);
static CHECK_NAN: AtomicBool = AtomicBool::new(true);

/// Gives the trace of the current forward call (the Python front end registers one that
/// formats the Python stack); the default is the Rust backtrace.
pub type TraceProvider = Arc<dyn Fn() -> String + Send + Sync>;

fn provider() -> &'static RwLock<Option<TraceProvider>> {
    static P: OnceLock<RwLock<Option<TraceProvider>>> = OnceLock::new();
    P.get_or_init(|| RwLock::new(None))
}

pub struct AnomalyMode;

impl AnomalyMode {
    pub fn is_enabled() -> bool {
        ENABLED.load(Ordering::Relaxed)
    }

    /// `torch.autograd.set_detect_anomaly(mode, check_nan=True)`.
    pub fn set_enabled(enabled: bool, check_nan: bool) {
        ENABLED.store(enabled, Ordering::Relaxed);
        CHECK_NAN.store(check_nan, Ordering::Relaxed);
    }

    pub fn should_check_nan() -> bool {
        CHECK_NAN.load(Ordering::Relaxed)
    }
}

/// Replaces the forward-trace provider.
pub fn set_trace_provider(p: Option<TraceProvider>) {
    *provider().write() = p;
}

/// The trace of the current call, as the provider gives it.
pub fn current_forward_trace() -> String {
    match provider().read().as_ref() {
        Some(p) => p(),
        None => std::backtrace::Backtrace::force_capture().to_string(),
    }
}
