//! Which server a test runs on, and the command metadata it shows.

/// Which server runs, for tests whose expectations depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerVersion {
    /// Valkey (`valkey_version` in INFO server), else Redis.
    pub valkey: bool,
    pub major: u32,
    pub minor: u32,
}

impl ServerVersion {
    pub fn parse(info_server: &str) -> ServerVersion {
        let field = |name: &str| {
            info_server
                .lines()
                .find_map(|l| l.strip_prefix(name).map(str::to_string))
        };
        let (valkey, text) = match field("valkey_version:") {
            Some(v) => (true, v),
            None => (false, field("redis_version:").expect("redis_version")),
        };
        let mut parts = text.split('.').map(|p| p.parse::<u32>().expect("version"));
        ServerVersion {
            valkey,
            major: parts.next().expect("major"),
            minor: parts.next().unwrap_or(0),
        }
    }

    /// Debian's Redis 7.0, on which RedisBloom 2.8.2 was observed.
    pub fn is_redis_70(&self) -> bool {
        !self.valkey && (self.major, self.minor) == (7, 0)
    }

    /// Modules can put commands in ACL categories (Redis 7.2+, Valkey).
    pub fn module_acl_categories(&self) -> bool {
        self.valkey || (self.major, self.minor) >= (7, 2)
    }

    /// Modules can add a category of their own (Redis 7.4+, Valkey 8+).
    pub fn module_category_names(&self) -> bool {
        (self.valkey && self.major >= 8) || (!self.valkey && (self.major, self.minor) >= (7, 4))
    }

    /// Whether the server's string-to-double conversion (used for every
    /// double argument) accepts C99 hex floats (`0x1p-7`): strtod in Redis
    /// and Valkey 8; Valkey 9's parser refuses them.
    pub fn parses_hex_floats(&self) -> bool {
        !(self.valkey && self.major >= 9)
    }

    /// Whether COMMAND INFO's last element (subcommands) is a RESP3 set when
    /// empty, as on Redis; Valkey 9 sends an array.
    pub fn resp3_subcommands_are_a_set(&self) -> bool {
        !(self.valkey && self.major >= 9)
    }

    /// Whether MODULE LIST shows Lua as a module (Valkey 9 loads its
    /// scripting engine as one).
    pub fn lua_is_a_module(&self) -> bool {
        self.valkey && self.major >= 9
    }

    /// Whether a script's `redis.call`/`redis.pcall` turns a command reply
    /// that holds an error element (BF.MADD's `[non scaling filter is
    /// full]`) into that error: Valkey 9's Lua engine does, for any module
    /// (RedisBloom 2.8.2 too); Redis and Valkey 8 return the array.
    pub fn scripts_lift_nested_errors(&self) -> bool {
        self.valkey && self.major >= 9
    }

    /// The ACL categories COMMAND INFO shows for the BF command `name`
    /// (lowercase): none where modules cannot set them (Redis 7.0, as
    /// RedisBloom 2.8.2); else `@read` or `@write`, `@fast` for the commands
    /// whose work is bounded by their items, and `@bloom` where modules can
    /// add a category.
    pub fn bf_acl_categories(&self, name: &str) -> Vec<&'static str> {
        if !self.module_acl_categories() {
            return Vec::new();
        }
        let write = [
            "bf.reserve",
            "bf.add",
            "bf.madd",
            "bf.insert",
            "bf.loadchunk",
        ];
        let fast = [
            "bf.add",
            "bf.madd",
            "bf.insert",
            "bf.exists",
            "bf.mexists",
            "bf.info",
            "bf.card",
        ];
        let mut categories = vec![if write.contains(&name) {
            "@write"
        } else {
            "@read"
        }];
        if fast.contains(&name) {
            categories.push("@fast");
        }
        if self.module_category_names() {
            categories.push("@bloom");
        }
        categories
    }

    /// The RDB version in DUMP payloads (the two bytes before the CRC).
    pub fn rdb_version(&self) -> u16 {
        match (self.valkey, self.major, self.minor) {
            (false, 7, 0) => 10,
            (false, 7, 2) => 11,
            (false, 7, 4) => 12,
            (true, 7 | 8, _) => 11,
            (true, 9, _) => 80,
            _ => panic!("RDB version of {self:?} unknown; add it here"),
        }
    }
}

/// The flags of the one key spec COMMAND INFO shows for the BF command
/// `name` (lowercase), in the server's order: `RO access` for the commands
/// that only read the filter, `RW insert` for those that add to it or create
/// it, `RW update` for BF.LOADCHUNK (it overwrites a filter's bits); none for
/// BF.PLAN, which takes no key. RedisBloom 2.8.2 shows `RW access update`
/// for all its commands (what Redis derives from key positions alone).
pub fn bf_key_spec_flags(name: &str) -> &'static [&'static str] {
    match name {
        "bf.reserve" | "bf.add" | "bf.madd" | "bf.insert" => &["RW", "insert"],
        "bf.loadchunk" => &["RW", "update"],
        "bf.exists" | "bf.mexists" | "bf.info" | "bf.card" | "bf.debug" | "bf.scandump"
        | "bf.stats" => &["RO", "access"],
        "bf.plan" => &[],
        _ => panic!("{name} is no BF command"),
    }
}
