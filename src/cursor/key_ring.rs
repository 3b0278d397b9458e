//! Cursor secrets and the ring of them a server holds: the first key seals new cursors, every key
//! opens cursors sealed with it.

use std::{fmt, str::FromStr};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};

/// Length of a cursor secret in bytes.
pub const SECRET_LEN: usize = 32;

/// One cursor secret: 32 random bytes and an id (0 to 255) that cursors carry. Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct CursorSecret {
    pub(super) id: u8,
    pub(super) bytes: [u8; SECRET_LEN],
}

impl CursorSecret {
    /// A new random secret with `id`, from the operating system's generator.
    pub fn generate(id: u8) -> Result<Self, getrandom::Error> {
        let mut bytes = [0u8; SECRET_LEN];
        getrandom::getrandom(&mut bytes)?;
        Ok(Self { id, bytes })
    }

    /// The secret's id.
    pub fn id(&self) -> u8 {
        self.id
    }

    /// The `ID:SECRET` form that [`KeyRing`] parses, with SECRET in base64url. This is the one way
    /// to reveal a secret; `dynarelay keygen` uses it.
    pub fn expose_spec(&self) -> String {
        format!("{}:{}", self.id, URL_SAFE_NO_PAD.encode(self.bytes))
    }
}

impl fmt::Debug for CursorSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CursorSecret {{ id: {}, bytes: <redacted> }}", self.id)
    }
}

impl FromStr for CursorSecret {
    type Err = KeyRingError;

    fn from_str(spec: &str) -> Result<Self, KeyRingError> {
        let (id, secret) = spec.trim().split_once(':').ok_or(KeyRingError::Format)?;
        let id = id.parse().map_err(|_| KeyRingError::Format)?;
        let bytes = URL_SAFE_NO_PAD
            .decode(secret)
            .ok()
            .and_then(|b| <[u8; SECRET_LEN]>::try_from(b).ok())
            .ok_or(KeyRingError::Format)?;
        Ok(Self { id, bytes })
    }
}

/// The cursor secrets in use: the first seals new cursors; all of them open cursors.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyRing(pub(super) Vec<CursorSecret>);

/// A key ring that cannot be used. Never repeats the secret it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyRingError {
    /// Not a comma-separated list of `ID:SECRET`.
    #[error(
        "expected a comma-separated list of ID:SECRET, each ID 0-255 and each SECRET 32 bytes in \
         base64url, as printed by `dynarelay keygen`"
    )]
    Format,
    /// An id appears twice.
    #[error("each key id may appear only once")]
    DuplicateId,
    /// No key at all.
    #[error("at least one key is required")]
    Empty,
}

/// The development key `scripts/dev` uses. Public in the repository, so never secret.
pub const DEVELOPMENT_KEY_SPEC: &str = "0:ZHluYXJlbGF5LWRldmVsb3BtZW50LWtleS1ub3Qtc2U";

impl KeyRing {
    /// A ring of `secrets`, the first being the primary.
    pub fn new(secrets: Vec<CursorSecret>) -> Result<Self, KeyRingError> {
        if secrets.is_empty() {
            return Err(KeyRingError::Empty);
        }
        for (i, secret) in secrets.iter().enumerate() {
            if secrets[..i].iter().any(|other| other.id == secret.id) {
                return Err(KeyRingError::DuplicateId);
            }
        }
        Ok(Self(secrets))
    }

    /// Whether the primary key is the public development key.
    pub fn is_development(&self) -> bool {
        DEVELOPMENT_KEY_SPEC
            .parse::<CursorSecret>()
            .is_ok_and(|dev| self.0[0] == dev)
    }
}

/// A key ring that a rotation step cannot take. Never repeats a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RotationError {
    /// The id asked for the new key is already in the ring.
    #[error("key id {0} is already in the ring; leave out --id to take an unused one")]
    IdInUse(u8),
    /// All 256 ids are in use.
    #[error("every key id (0-255) is in use; retire keys first")]
    NoFreeId,
    /// A ring of one key has no new key to seal with, or no old key to retire.
    #[error("the ring holds one key (id {0}): start a rotation with `--rotate add`")]
    SingleKey(u8),
}

impl KeyRing {
    /// The id of the key that seals new cursors.
    pub fn sealing_id(&self) -> u8 {
        self.0[0].id
    }

    /// The ids of every key, the sealing one first: the keys that open cursors.
    pub fn ids(&self) -> Vec<u8> {
        self.0.iter().map(|secret| secret.id).collect()
    }

    /// The ring as `dynarelay serve` reads it (`ID:SECRET,...`): the one way to reveal a ring;
    /// `dynarelay keygen --rotate` prints it.
    pub fn expose_specs(&self) -> String {
        let specs: Vec<String> = self.0.iter().map(CursorSecret::expose_spec).collect();
        specs.join(",")
    }

    /// An id for a new key: one past the largest in the ring, or else the smallest free one.
    pub fn unused_id(&self) -> Result<u8, RotationError> {
        let ids = self.ids();
        let largest = ids.iter().copied().max().unwrap_or(0);
        largest
            .checked_add(1)
            .or_else(|| (0..=u8::MAX).find(|id| !ids.contains(id)))
            .ok_or(RotationError::NoFreeId)
    }

    /// Rotation step 1: the ring with `secret` added last, where it opens cursors but does not
    /// seal them. Deployed everywhere first, so that any instance opens what step 2 seals.
    pub fn adding(&self, secret: CursorSecret) -> Result<KeyRing, RotationError> {
        if self.0.iter().any(|held| held.id == secret.id) {
            return Err(RotationError::IdInUse(secret.id));
        }
        let mut secrets = self.0.clone();
        secrets.push(secret);
        Ok(Self(secrets))
    }

    /// Rotation step 2: the ring with its last key (the one step 1 added) sealing, and the
    /// others still opening the cursors clients hold.
    pub fn sealing_with_last(&self) -> Result<KeyRing, RotationError> {
        if self.0.len() < 2 {
            return Err(RotationError::SingleKey(self.sealing_id()));
        }
        let mut secrets = self.0.clone();
        secrets.rotate_right(1);
        Ok(Self(secrets))
    }

    /// Rotation step 3: the sealing key alone; cursors sealed with the others stop opening.
    pub fn retiring_others(&self) -> Result<KeyRing, RotationError> {
        if self.0.len() < 2 {
            return Err(RotationError::SingleKey(self.sealing_id()));
        }
        Ok(Self(vec![self.0[0].clone()]))
    }
}

impl FromStr for KeyRing {
    type Err = KeyRingError;

    fn from_str(specs: &str) -> Result<Self, KeyRingError> {
        let secrets = specs
            .split(',')
            .filter(|spec| !spec.trim().is_empty())
            .map(str::parse)
            .collect::<Result<_, _>>()?;
        Self::new(secrets)
    }
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<u8> = self.0.iter().map(|s| s.id).collect();
        write!(f, "KeyRing {{ ids: {ids:?}, secrets: <redacted> }}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_rings_parse_and_never_print_secrets() {
        let spec = format!(
            "{},1:{}",
            DEVELOPMENT_KEY_SPEC,
            URL_SAFE_NO_PAD.encode([3u8; 32])
        );
        let ring: KeyRing = spec.parse().unwrap();
        assert!(ring.is_development());
        let printed = format!("{ring:?} {:?}", ring.0[1]);
        assert!(!printed.contains("ZHlu") && !printed.contains(&URL_SAFE_NO_PAD.encode([3u8; 32])));
        assert!(printed.contains("[0, 1]"), "{printed}");
        for (bad, err) in [
            ("", KeyRingError::Empty),
            ("1", KeyRingError::Format),
            ("1:short", KeyRingError::Format),
            (
                "256:ZHluYXJlbGF5LWRldmVsb3BtZW50LWtleS1ub3Qtc2U",
                KeyRingError::Format,
            ),
            (
                &format!("{DEVELOPMENT_KEY_SPEC},{DEVELOPMENT_KEY_SPEC}"),
                KeyRingError::DuplicateId,
            ),
        ] {
            assert_eq!(bad.parse::<KeyRing>(), Err(err), "{bad:?}");
        }
        let generated = CursorSecret::generate(4).unwrap();
        assert_eq!(
            generated.expose_spec().parse::<CursorSecret>().unwrap(),
            generated
        );
        assert!(!KeyRing::new(vec![generated]).unwrap().is_development());
    }

    #[test]
    fn a_rotation_adds_then_seals_then_retires() {
        let old = CursorSecret::generate(7).unwrap();
        let ring = KeyRing::new(vec![old.clone()]).unwrap();
        assert_eq!(
            ring.sealing_with_last(),
            Err(RotationError::SingleKey(7)),
            "nothing to seal with yet"
        );
        assert_eq!(ring.retiring_others(), Err(RotationError::SingleKey(7)));

        let id = ring.unused_id().unwrap();
        assert_eq!(id, 8);
        let new = CursorSecret::generate(id).unwrap();
        assert_eq!(
            ring.adding(CursorSecret::generate(7).unwrap()),
            Err(RotationError::IdInUse(7))
        );
        let added = ring.adding(new.clone()).unwrap();
        assert_eq!((added.sealing_id(), added.ids()), (7, vec![7, 8]));
        let sealing = added.sealing_with_last().unwrap();
        assert_eq!((sealing.sealing_id(), sealing.ids()), (8, vec![8, 7]));
        let retired = sealing.retiring_others().unwrap();
        assert_eq!(retired.ids(), vec![8]);
        assert_eq!(retired, KeyRing::new(vec![new.clone()]).unwrap());

        // What each step prints is what the next step (and `serve`) reads.
        let printed: KeyRing = sealing.expose_specs().parse().unwrap();
        assert_eq!(printed, sealing);
        assert_eq!(
            printed.expose_specs(),
            format!("{},{}", new.expose_spec(), old.expose_spec())
        );
    }

    #[test]
    fn new_ids_go_past_the_largest_then_fill_gaps() {
        let ring = |ids: &[u8]| {
            KeyRing::new(
                ids.iter()
                    .map(|&id| CursorSecret::generate(id).unwrap())
                    .collect(),
            )
            .unwrap()
        };
        assert_eq!(ring(&[3, 1]).unused_id(), Ok(4));
        assert_eq!(ring(&[255, 0, 1]).unused_id(), Ok(2));
        let all: Vec<u8> = (0..=u8::MAX).collect();
        assert_eq!(ring(&all).unused_id(), Err(RotationError::NoFreeId));
    }

    #[test]
    fn the_quick_start_uses_the_development_key() {
        assert!(include_str!("../../scripts/dev").contains(DEVELOPMENT_KEY_SPEC));
    }
}
