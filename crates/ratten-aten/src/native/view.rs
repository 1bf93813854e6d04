//! View operators and their stride rules. (views helper)
