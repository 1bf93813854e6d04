//! The CPU generator and random factories. (views helper)
