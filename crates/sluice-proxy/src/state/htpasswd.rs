//! An htpasswd file as Apache's `htpasswd` and `openssl passwd` write it: one
//! `user:hash` a line, `#` comments. Read whole at start and at each reload; a line
//! that cannot be used (a plain-text password, DES crypt, an unknown hash) is an error
//! naming its line, so a file never half-works.

use sluice_config::{Config, ConfigError, Errors, Place};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// The users of one htpasswd file.
pub struct Users {
    by_name: HashMap<String, Hash>,
    /// The file's slowest hash, which an unknown user's password is checked against:
    /// a name that does not exist costs what one that does costs.
    slowest: Option<Hash>,
}

/// A password hash, by the scheme its prefix names.
#[derive(Clone)]
enum Hash {
    /// `$2y$`, `$2a$`, `$2b$` (`htpasswd -B`).
    Bcrypt(String),
    /// `$apr1$SALT$...` (`htpasswd -m`, `openssl passwd -apr1`) and `$1$SALT$...`
    /// (`openssl passwd -1`): the same MD5 rounds with another prefix.
    Md5 {
        magic: &'static str,
        salt: String,
        whole: String,
    },
    /// `{SHA}` + base64 of the SHA-1 of the password (`htpasswd -s`), unsalted.
    Sha1([u8; 20]),
    /// `$5$...` and `$6$...` (`openssl passwd -5`, `-6`).
    Sha256Crypt(String),
    Sha512Crypt(String),
}

impl Users {
    /// Reads the file named at `at` (a route's `user_file`): every problem at once.
    pub fn read(path: &Path, at: &Place) -> Result<Users, Errors> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Errors(vec![ConfigError::at_place(
                at,
                format!("cannot read the htpasswd file {name}: {e}"),
                "create it with `htpasswd -c -B FILE USER`, or fix the path",
            )])
        })?;
        Users::parse(&name, &text)
    }

    /// The users in `text`, the contents of the file `name`.
    pub fn parse(name: &str, text: &str) -> Result<Users, Errors> {
        let mut by_name = HashMap::new();
        let mut errors = Vec::new();
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            let start = offset;
            offset += line.len();
            let line = line.trim_end_matches(['\r', '\n']);
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let error = |message: String, hint: &str| {
                ConfigError::at(name, text, Some(start..start + line.len()), message, hint)
            };
            // `user:hash`, and nginx allows `:comment` after the hash.
            let mut fields = line.splitn(3, ':');
            let (Some(user), Some(hash)) = (fields.next(), fields.next()) else {
                errors.push(error("a line without `user:hash`".into(), HASH_IT));
                continue;
            };
            match Hash::parse(hash) {
                Ok(_) if by_name.contains_key(user) => {
                    errors.push(error(
                        format!("user \"{user}\" is listed twice"),
                        "keep one line per user",
                    ));
                }
                Ok(h) => {
                    by_name.insert(user.to_string(), h);
                }
                Err(why) => errors.push(error(format!("user \"{user}\": {why}"), HASH_IT)),
            }
        }
        if !errors.is_empty() {
            return Err(Errors(errors));
        }
        let slowest = by_name.values().max_by_key(|h| h.slowness()).cloned();
        Ok(Users { by_name, slowest })
    }

    /// Whether `password` is `user`'s. An unknown user costs what the file's slowest
    /// hash costs, so that timing does not tell which names exist.
    pub fn verify(&self, user: &str, password: &[u8]) -> bool {
        match self.by_name.get(user) {
            Some(hash) => hash.verify(password),
            None => {
                if let Some(slowest) = &self.slowest {
                    let _ = slowest.verify(password);
                }
                false
            }
        }
    }

    /// Whether checking a password against this file is cheap enough for a worker
    /// thread: every hash in it an unsalted SHA-1. Decided for the whole file, not per
    /// user, so that an unknown name takes the same path as a known one.
    pub fn cheap(&self) -> bool {
        self.slowest.as_ref().is_none_or(|h| h.slowness() == 0)
    }
}

/// The users of every route with `auth_basic`, by route index (`None` for the others),
/// each file read once however many routes name it. An error names the file and line.
pub(crate) fn for_routes(config: &Config) -> Result<Vec<Option<Arc<Users>>>, Errors> {
    let mut read: Vec<(&std::path::Path, Arc<Users>)> = Vec::new();
    let mut errors = Vec::new();
    let mut out = Vec::new();
    for route in &config.routes {
        let Some(auth) = &route.guard.auth else {
            out.push(None);
            continue;
        };
        if let Some((_, users)) = read.iter().find(|(p, _)| *p == auth.user_file) {
            out.push(Some(users.clone()));
            continue;
        }
        match Users::read(&auth.user_file, &auth.at) {
            Ok(users) => {
                let users = Arc::new(users);
                read.push((&auth.user_file, users.clone()));
                out.push(Some(users));
            }
            Err(e) => {
                errors.extend(e.0);
                out.push(None);
            }
        }
    }
    match errors.is_empty() {
        true => Ok(out),
        false => Err(Errors(errors)),
    }
}

const HASH_IT: &str =
    "hash the password: `htpasswd -B FILE USER` (bcrypt), or `openssl passwd -apr1`";

impl Hash {
    fn parse(hash: &str) -> Result<Hash, &'static str> {
        let scheme = |prefix: &str| hash.starts_with(prefix);
        if scheme("$2y$") || scheme("$2a$") || scheme("$2b$") {
            return hash
                .parse::<bcrypt::HashParts>()
                .map(|_| Hash::Bcrypt(hash.to_string()))
                .map_err(|_| "a malformed bcrypt hash");
        }
        if let Some(rest) = hash.strip_prefix("{SHA}") {
            return sha1_digest(rest)
                .map(Hash::Sha1)
                .ok_or("a malformed {SHA} hash");
        }
        for magic in ["$apr1$", "$1$"] {
            if let Some(rest) = hash.strip_prefix(magic) {
                return md5_salt(rest)
                    .map(|salt| Hash::Md5 {
                        magic,
                        salt: salt.to_string(),
                        whole: hash.to_string(),
                    })
                    .ok_or("a malformed MD5 hash");
            }
        }
        for (prefix, length) in [("$5$", 43), ("$6$", 86)] {
            if let Some(rest) = hash.strip_prefix(prefix) {
                // [rounds=N$]salt$checksum, the checksum of a fixed length.
                let checksum = rest.rsplit('$').next().unwrap_or("");
                if checksum.len() != length || !rest.contains('$') {
                    return Err("a malformed SHA-crypt hash");
                }
                let text = hash.to_string();
                return Ok(match prefix {
                    "$5$" => Hash::Sha256Crypt(text),
                    _ => Hash::Sha512Crypt(text),
                });
            }
        }
        if hash.len() == 13
            && hash
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'/')
        {
            return Err(
                "a DES crypt hash, which keeps only 8 characters of a password; sluice refuses it",
            );
        }
        Err("a plain-text password or a hash sluice does not know; sluice refuses it")
    }

    /// How slow the scheme is, to pick the file's slowest: 0 for the unsalted SHA-1,
    /// then MD5's thousand rounds, SHA-crypt's thousands, bcrypt's 2^cost.
    fn slowness(&self) -> u8 {
        match self {
            Hash::Sha1(_) => 0,
            Hash::Md5 { .. } => 1,
            Hash::Sha256Crypt(_) | Hash::Sha512Crypt(_) => 2,
            Hash::Bcrypt(_) => 3,
        }
    }

    fn verify(&self, password: &[u8]) -> bool {
        match self {
            Hash::Bcrypt(h) => bcrypt::verify(password, h).unwrap_or(false),
            Hash::Md5 { magic, salt, whole } => {
                let made = md5_crypt(password, salt.as_bytes(), magic);
                made.as_bytes().ct_eq(whole.as_bytes()).into()
            }
            Hash::Sha1(digest) => {
                use sha1::Digest;
                sha1::Sha1::digest(password).as_slice().ct_eq(digest).into()
            }
            Hash::Sha256Crypt(h) => {
                std::str::from_utf8(password).is_ok_and(|p| sha_crypt::sha256_check(p, h).is_ok())
            }
            Hash::Sha512Crypt(h) => {
                std::str::from_utf8(password).is_ok_and(|p| sha_crypt::sha512_check(p, h).is_ok())
            }
        }
    }
}

/// The SHA-1 digest in a `{SHA}` hash.
fn sha1_digest(b64: &str) -> Option<[u8; 20]> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    bytes.try_into().ok()
}

/// The salt of an MD5-crypt hash after its magic: up to 8 characters before `$`, and
/// a 22-character checksum after it.
fn md5_salt(rest: &str) -> Option<&str> {
    let (salt, checksum) = rest.split_once('$')?;
    (salt.len() <= 8 && checksum.len() == 22).then_some(salt)
}

/// crypt(3)'s alphabet for hash text.
const ITOA64: &[u8] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Poul-Henning Kamp's MD5-crypt, with the magic `$1$` or Apache's `$apr1$`: the whole
/// hash text, `MAGIC SALT $ CHECKSUM`.
fn md5_crypt(password: &[u8], salt: &[u8], magic: &str) -> String {
    use md5::{Digest, Md5};
    let alternate = Md5::new()
        .chain_update(password)
        .chain_update(salt)
        .chain_update(password)
        .finalize();
    let mut ctx = Md5::new()
        .chain_update(password)
        .chain_update(magic)
        .chain_update(salt);
    for chunk in password.chunks(16) {
        ctx.update(&alternate[..chunk.len()]);
    }
    let mut bits = password.len();
    while bits > 0 {
        // The C original's quirk, kept by every implementation: a NUL for a set bit,
        // the password's first byte for a clear one.
        ctx.update(if bits & 1 == 1 {
            &[0u8][..]
        } else {
            &password[..1]
        });
        bits >>= 1;
    }
    let mut digest: [u8; 16] = ctx.finalize().into();
    for round in 0..1000 {
        let mut ctx = Md5::new();
        ctx.update(if round % 2 == 1 {
            password
        } else {
            &digest[..]
        });
        if round % 3 != 0 {
            ctx.update(salt);
        }
        if round % 7 != 0 {
            ctx.update(password);
        }
        ctx.update(if round % 2 == 1 {
            &digest[..]
        } else {
            password
        });
        digest = ctx.finalize().into();
    }
    let mut out = format!("{magic}{}$", String::from_utf8_lossy(salt));
    push_checksum(&mut out, &digest);
    out
}

/// The digest as crypt(3) writes it: its bytes in MD5-crypt's order, 6 bits a letter.
fn push_checksum(out: &mut String, digest: &[u8; 16]) {
    let groups = [(0, 6, 12), (1, 7, 13), (2, 8, 14), (3, 9, 15), (4, 10, 5)];
    for (a, b, c) in groups {
        let v = u32::from(digest[a]) << 16 | u32::from(digest[b]) << 8 | u32::from(digest[c]);
        push64(out, v, 4);
    }
    push64(out, u32::from(digest[11]), 2);
}

fn push64(out: &mut String, mut v: u32, n: usize) {
    for _ in 0..n {
        out.push(char::from(ITOA64[(v & 0x3f) as usize]));
        v >>= 6;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_crypt_matches_known_hashes() {
        // Vectors from `openssl passwd -apr1 -salt SALT` and `-1`.
        assert_eq!(
            md5_crypt(b"password", b"RandSalt", "$apr1$"),
            "$apr1$RandSalt$PgCXHRrkpSt4cbyC2C6bm/"
        );
        let users = Users::parse("f", "u:$apr1$RandSalt$PgCXHRrkpSt4cbyC2C6bm/\n").unwrap();
        assert!(users.verify("u", b"password"));
        assert!(!users.verify("u", b"passwore") && !users.verify("v", b"password"));
        // `openssl passwd -1 -salt abc password`.
        assert_eq!(
            md5_crypt(b"password", b"abc", "$1$"),
            "$1$abc$BXBqpb9BZcZhXLgbee.0s/"
        );
        // Past 16 bytes of password, and with an empty salt.
        assert_eq!(
            md5_crypt(b"a-password-longer-than-16-bytes!", b"12345678", "$apr1$"),
            "$apr1$12345678$Nx.Ye7lv4z5e55D7m.aNM0"
        );
        assert_eq!(
            md5_crypt(b"password", b"", "$apr1$"),
            "$apr1$$qjtLUZpoiD4RwXIYf4qVb0"
        );
    }

    #[test]
    fn sha_crypt_from_openssl() {
        // `openssl passwd -5 -salt abc password`, and `-6`.
        let text = "five:$5$abc$6va2Z4O.keO7R84v9g0B9d2NkB7NOyTy0sMeQ5Z3LLA\n\
            six:$6$abc$rvqzMBuMVukmply9mZJpW0wJMdDfgUKLDrSNxf9l66h/ytQiKNAdqHSj5YPJpxWJpVjRXibQXRddCl9xYHQnd0\n";
        let users = Users::parse("f", text).unwrap();
        assert!(users.verify("five", b"password") && users.verify("six", b"password"));
        assert!(!users.verify("six", b"passwore"));
        let short = Users::parse("f", "five:$5$abc$6va2Z4O\n");
        assert!(
            short.is_err(),
            "a cut hash is refused at load, not a user who never logs in"
        );
    }

    #[test]
    fn sha1_and_bcrypt() {
        // {SHA} of "password"; bcrypt of "password" at cost 4.
        let bcrypt = bcrypt::hash("password", 4).unwrap();
        let text = format!("# ops\n\na:{{SHA}}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\nb:{bcrypt}\n");
        let users = Users::parse("f", &text).unwrap();
        assert!(users.verify("a", b"password") && users.verify("b", b"password"));
        assert!(!users.cheap(), "one bcrypt user makes the whole file slow");
        let sha = Users::parse("f", "a:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=:a comment\n").unwrap();
        assert!(sha.cheap() && sha.verify("a", b"password"));
        assert!(!users.verify("a", b"Password") && !users.verify("b", b""));
    }

    #[test]
    fn unusable_lines_are_errors_naming_their_line() {
        let text = "ok:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\nplain:hunter2\ndes:abJnggxhB/yWI\nnocolon\nok:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n";
        let errors = Users::parse("htpasswd", text).err().unwrap().0;
        let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [2, 3, 4, 5], "{errors:?}");
        assert!(errors[0].message.contains("plain-text"), "{}", errors[0]);
        assert!(errors[1].message.contains("DES"), "{}", errors[1]);
        assert!(errors[3].message.contains("twice"), "{}", errors[3]);
    }
}
