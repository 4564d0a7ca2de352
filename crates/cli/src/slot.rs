//! Redis Cluster hash slots, and the temporary key a migration loads a
//! filter into before it is renamed into place.
//!
//! RENAME works in a cluster only when both names hash to the same slot, so
//! the temporary name carries a hash tag chosen to land in the final
//! name's slot. The same rule is used on standalone servers, so that a
//! temporary key always has the same, recognisable name.

/// Every temporary key starts with this prefix; `stats` and `migrate` tell
/// them from real filters by it.
pub const TEMP_PREFIX: &[u8] = b"ferrobloom-migrate:";

const SLOTS: u16 = 16384;

/// CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with.
fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in data {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The part of a key that Redis Cluster hashes: the text between the first
/// `{` and the next `}` when it is not empty, else the whole key.
fn hashed_part(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// The hash slot of a key.
pub fn slot(key: &[u8]) -> u16 {
    crc16(hashed_part(key)) % SLOTS
}

/// The smallest decimal number whose hash slot is `target`. Every slot has
/// one below 110,000 (checked by a unit test), so the search is short.
fn tag_for_slot(target: u16) -> u64 {
    (0u64..)
        .find(|n| crc16(n.to_string().as_bytes()) % SLOTS == target)
        .expect("every slot has a decimal tag")
}

/// The temporary key a copy to `dest` is loaded into:
/// `ferrobloom-migrate:{<tag>}:<dest>`, in the same hash slot as `dest`.
pub fn temp_key(dest: &[u8]) -> Vec<u8> {
    let mut key = TEMP_PREFIX.to_vec();
    key.push(b'{');
    key.extend_from_slice(tag_for_slot(slot(dest)).to_string().as_bytes());
    key.extend_from_slice(b"}:");
    key.extend_from_slice(dest);
    key
}

/// Whether `key` is a temporary key of a migration.
pub fn is_temp_key(key: &[u8]) -> bool {
    key.starts_with(TEMP_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_matches_the_cluster_specification() {
        // The check value of CRC16/XMODEM, quoted by the Redis Cluster spec.
        assert_eq!(crc16(b"123456789"), 0x31C3);
    }

    #[test]
    fn slots_follow_hash_tags() {
        // Values of CLUSTER KEYSLOT (the first two from its documentation).
        assert_eq!(slot(b"somekey"), 11058);
        assert_eq!(slot(b"foo{hash_tag}"), 2515);
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"bar"), 5061);
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
        assert_eq!(slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % SLOTS);
        assert_eq!(slot(b"foo{{bar}}zap"), slot(b"{bar"));
        assert_eq!(slot(b"foo{bar}{zap}"), slot(b"bar"));
    }

    #[test]
    fn every_slot_has_a_short_tag() {
        let mut found = vec![false; SLOTS as usize];
        let mut missing = SLOTS as usize;
        for n in 0..110_000u64 {
            let s = crc16(n.to_string().as_bytes()) % SLOTS;
            if !found[s as usize] {
                found[s as usize] = true;
                missing -= 1;
            }
        }
        assert_eq!(missing, 0);
    }

    #[test]
    fn temporary_keys_share_the_slot_of_their_destination() {
        for dest in [
            &b"sessions"[..],
            b"{user1000}.bloom",
            b"a}b",
            b"a{}b",
            b"a{b",
            b"\x00\xff\n",
            b"",
        ] {
            let temp = temp_key(dest);
            assert!(is_temp_key(&temp));
            assert!(temp.ends_with(dest));
            assert_eq!(slot(&temp), slot(dest), "{temp:?}");
        }
        assert!(!is_temp_key(b"sessions"));
    }
}
