//! Measured quantities as findings write them: a time in milliseconds, a size in MiB (GiB
//! from 1024 MiB), with the digits the size of the number warrants. `cudoctor run`'s rules
//! write theirs the same way.

/// `0.046 ms`, `3.4 ms`, `120 ms`.
pub fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0} ms")
    } else if x >= 1.0 {
        format!("{x:.1} ms")
    } else {
        format!("{x:.3} ms")
    }
}

/// `512 MiB`, `1.5 GiB`.
pub fn mib(x: f64) -> String {
    if x >= 1024.0 {
        format!("{:.1} GiB", x / 1024.0)
    } else {
        format!("{x:.0} MiB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_follow_the_size() {
        assert_eq!(ms(0.046), "0.046 ms");
        assert_eq!(ms(3.395), "3.4 ms");
        assert_eq!(ms(120.4), "120 ms");
        assert_eq!(mib(512.0), "512 MiB");
        assert_eq!(mib(1536.0), "1.5 GiB");
    }
}
