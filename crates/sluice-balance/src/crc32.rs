//! CRC-32 (IEEE 802.3, as zlib and nginx compute it). The ketama ring hashes with it so
//! that it places servers and keys exactly where nginx's `hash ... consistent` does.

const TABLE: [u32; 256] = table();

const fn table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 1 == 1 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            bit += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

/// The running state before any byte.
pub const INIT: u32 = 0xffff_ffff;

/// Feeds `data` into a running CRC state.
pub fn update(mut state: u32, data: &[u8]) -> u32 {
    for &b in data {
        state = TABLE[((state ^ u32::from(b)) & 0xff) as usize] ^ (state >> 8);
    }
    state
}

/// The checksum of a finished state.
pub fn finish(state: u32) -> u32 {
    state ^ 0xffff_ffff
}

/// CRC-32 of `data`.
pub fn crc32(data: &[u8]) -> u32 {
    finish(update(INIT, data))
}

#[cfg(test)]
mod tests {
    #[test]
    fn standard_check_value() {
        assert_eq!(super::crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(super::crc32(b""), 0);
    }
}
