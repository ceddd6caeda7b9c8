//! Seeded randomness for generated names, uids and fault decisions.
//!
//! A test that injects a 30% error rate or depends on a generated name must behave the same on
//! every run, so nothing here reads the OS entropy pool: one seed in the config decides all.

/// The characters kube-apiserver uses for `generateName` suffixes (no vowels, no look-alikes).
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// What the server stamps on new objects: generated names, uids and times.
///
/// Each name and uid is drawn from the seed and what it is for (the namespace and prefix of a
/// `generateName`, the resource, namespace and name of a uid) plus how many were drawn for that
/// purpose before, not from one shared sequence. Two controllers writing at once therefore get
/// the same names and uids on every run whatever order their requests arrive in, which is what
/// makes `plan`'s output repeatable.
#[derive(Debug, Clone)]
pub struct Stamps {
    seed: u64,
    drawn: std::collections::HashMap<String, u64>,
    fixed_time: Option<k8s_openapi::jiff::Timestamp>,
}

impl Stamps {
    /// Stamps from `seed`; `fixed_time`, when given, is the time of every timestamp.
    pub fn new(seed: u64, fixed_time: Option<k8s_openapi::jiff::Timestamp>) -> Self {
        Self {
            seed,
            drawn: std::collections::HashMap::new(),
            fixed_time,
        }
    }

    fn generator(&mut self, purpose: &str) -> SeededRng {
        let count = self.drawn.entry(purpose.to_owned()).or_default();
        *count += 1;
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in purpose.bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        SeededRng::new(self.seed ^ hash ^ count.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    /// The five-character suffix for a `generateName` of `prefix` in `namespace`.
    pub fn name_suffix(&mut self, namespace: &str, prefix: &str) -> String {
        self.generator(&format!("name/{namespace}/{prefix}"))
            .name_suffix()
    }

    /// A uid for the object `name` of `resource` in `namespace`.
    pub fn uid(&mut self, resource: &str, namespace: &str, name: &str) -> String {
        self.generator(&format!("uid/{resource}/{namespace}/{name}"))
            .uid()
    }

    /// The time `seconds_from_now` from now (from the fixed time, if one was set).
    pub fn time(&self, seconds_from_now: i64) -> k8s_openapi::jiff::Timestamp {
        use k8s_openapi::jiff::SignedDuration;
        let now = self.fixed_time.unwrap_or_else(wall_clock);
        now.checked_add(SignedDuration::from_secs(seconds_from_now))
            .unwrap_or(now)
    }

    /// [`Self::time`] as a Kubernetes `Time` value.
    pub fn timestamp(&self, seconds_from_now: i64) -> serde_json::Value {
        serde_json::to_value(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            self.time(seconds_from_now),
        ))
        .unwrap_or(serde_json::Value::Null)
    }
}

/// The time now, by the system clock (whatever [`crate::Config::fixed_time`] says).
pub fn wall_clock() -> k8s_openapi::jiff::Timestamp {
    use k8s_openapi::jiff::Timestamp;
    // jiff is built without its `std` feature here, so read the clock through std.
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX);
    let nanos = i32::try_from(since_epoch.subsec_nanos()).unwrap_or(0);
    Timestamp::new(seconds, nanos).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// The one seeded generator of the workspace: the server's names, uids and fault decisions,
/// and the bench's and fault schedules' picks all draw from it, so the same seed gives the
/// same run. xorshift64* (Vigna), its state spread from the seed by one splitmix64 step so
/// that neighbouring seeds (0, 1, 2) start unrelated; fast, and good enough for tests. The
/// fault schedules' seeds name the same schedules as before the generators became one.
#[derive(Debug, Clone)]
pub struct SeededRng(u64);

impl SeededRng {
    /// A generator that always produces the same sequence for the same seed.
    pub fn new(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // Zero is xorshift's fixed point.
        Self(if z == 0 { 0x9E37_79B9_7F4A_7C15 } else { z })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        // The modulo bias (below 2^-40 for any n a test picks from) is far below what a
        // schedule or a benchmark could notice.
        (self.next_u64() % n as u64) as usize
    }

    /// A fair coin.
    pub fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }

    /// A float in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The five-character suffix appended to `generateName`.
    pub fn name_suffix(&mut self) -> String {
        (0..5)
            .map(|_| {
                let i = (self.next_u64() % NAME_ALPHABET.len() as u64) as usize;
                char::from(NAME_ALPHABET[i])
            })
            .collect()
    }

    /// A version-4 style UUID string.
    pub fn uid(&mut self) -> String {
        let hi = self.next_u64();
        let lo = self.next_u64();
        let hi = (hi & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000;
        let lo = (lo & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000;
        format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            hi >> 32,
            (hi >> 16) & 0xFFFF,
            hi & 0xFFFF,
            lo >> 48,
            lo & 0xFFFF_FFFF_FFFF
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_gives_same_names_and_uids() {
        let (mut a, mut b) = (SeededRng::new(7), SeededRng::new(7));
        assert_eq!(a.name_suffix(), b.name_suffix());
        assert_eq!(a.uid(), b.uid());
    }

    #[test]
    fn stamps_do_not_depend_on_the_order_of_other_requests() {
        let mut a = Stamps::new(5, None);
        let mut b = Stamps::new(5, None);
        let first = a.name_suffix("ns", "web-");
        b.uid("endpoints", "ns", "db");
        b.name_suffix("ns", "db-");
        assert_eq!(b.name_suffix("ns", "web-"), first);
        assert_ne!(a.name_suffix("ns", "web-"), first, "a second draw differs");
    }

    #[test]
    fn picks_stay_in_range_and_both_sides_of_the_coin_come_up() {
        let mut rng = SeededRng::new(0);
        assert_eq!(rng.below(0), 0);
        assert!((0..1000).all(|_| rng.below(10) < 10));
        let heads = (0..1000).filter(|_| rng.coin()).count();
        assert!((400..600).contains(&heads), "{heads} heads in 1000");
    }

    #[test]
    fn uids_look_like_version_4_uuids() {
        let uid = SeededRng::new(1).uid();
        assert_eq!(uid.len(), 36);
        assert_eq!(uid.as_bytes()[14], b'4');
        assert!(matches!(uid.as_bytes()[19], b'8' | b'9' | b'a' | b'b'));
    }

    #[test]
    fn name_suffixes_use_the_kubernetes_alphabet() {
        let suffix = SeededRng::new(3).name_suffix();
        assert_eq!(suffix.len(), 5);
        assert!(suffix.bytes().all(|c| NAME_ALPHABET.contains(&c)));
    }
}
