//! Checks of the test harness itself, run against the RedisBloom oracle.

mod common;

use common::{decode, pid_alive, ModuleKind, RawClient, Resp, Server, ServerOpts};

fn oracle() -> Server {
    Server::start(ServerOpts::new(ModuleKind::RedisBloom))
}

#[test]
fn reserve_info_reload_restart_resp3() {
    let mut server = oracle();
    let mut raw = server.raw();
    assert_eq!(raw.line("BF.RESERVE k 0.001 10000000"), b"+OK\r\n");
    assert_eq!(raw.line("BF.INFO k SIZE"), b"*1\r\n:19775456\r\n");

    assert_eq!(raw.line("DEBUG RELOAD"), b"+OK\r\n");
    assert_eq!(raw.line("BF.INFO k SIZE"), b"*1\r\n:19775456\r\n");

    assert_eq!(raw.line("SAVE"), b"+OK\r\n");
    let old_pid = server.pid();
    server.restart();
    assert_ne!(server.pid(), old_pid);
    assert!(!pid_alive(old_pid));
    let mut raw = server.raw();
    assert_eq!(raw.line("BF.INFO k SIZE"), b"*1\r\n:19775456\r\n");

    raw.hello3();
    assert_eq!(raw.line("BF.ADD x a"), b"#t\r\n");
    assert_eq!(raw.line("BF.ADD x a"), b"#f\r\n");
}

#[test]
fn redis_rs_connections() {
    let server = oracle();
    let mut c = server.conn();
    let added: bool = redis::cmd("BF.ADD")
        .arg("k")
        .arg("a")
        .query(&mut c)
        .unwrap();
    assert!(added);
    let mut c3 = server.conn3();
    let exists: bool = redis::cmd("BF.EXISTS")
        .arg("k")
        .arg("a")
        .query(&mut c3)
        .unwrap();
    assert!(exists);
}

#[test]
fn raw_replies_and_decoder() {
    let server = oracle();
    let mut raw = server.raw();
    assert_eq!(
        raw.cmd(&[b"BF.MADD".as_slice(), b"k", b"a", b"\xff"]),
        b"*2\r\n:1\r\n:1\r\n"
    );
    assert_eq!(raw.line("GET missing"), b"$-1\r\n");
    let err = raw.line("BF.ADD");
    assert!(
        err.starts_with(b"-ERR wrong number of arguments"),
        "{err:?}"
    );

    let info = decode(&raw.line("BF.INFO k"));
    let Resp::Array(items) = &info else {
        panic!("{info:?}")
    };
    assert_eq!(items[0], Resp::Simple("Capacity".into()));

    raw.hello3();
    let info3 = decode(&raw.line("BF.INFO k"));
    let Resp::Map(pairs) = &info3 else {
        panic!("{info3:?}")
    };
    assert_eq!(pairs[0].0, Resp::Simple("Capacity".into()));
    assert_eq!(decode(&raw.line("GET missing")), Resp::Nil);
    assert_eq!(raw.line("GET missing"), b"_\r\n");

    let cmds: Vec<Vec<String>> = (0..3000)
        .map(|i| vec!["BF.ADD".into(), "p".into(), i.to_string()])
        .collect();
    let replies = raw.pipeline(&cmds);
    assert_eq!(replies.len(), 3000);
    assert!(replies.iter().all(|r| r == b"#t\r\n" || r == b"#f\r\n"));
    assert_eq!(raw.line("PING"), b"+PONG\r\n");
}

#[test]
fn resp3_decoder_types() {
    let cases: &[(&[u8], Resp)] = &[
        (b",1.5\r\n", Resp::Double("1.5".into())),
        (b"(123\r\n", Resp::BigNumber("123".into())),
        (b"!3\r\nERR\r\n", Resp::Error("ERR".into())),
        (
            b"=7\r\ntxt:abc\r\n",
            Resp::Verbatim("txt".into(), b"abc".to_vec()),
        ),
        (b"~1\r\n:1\r\n", Resp::Set(vec![Resp::Int(1)])),
        (b">1\r\n+x\r\n", Resp::Push(vec![Resp::Simple("x".into())])),
        (b"*-1\r\n", Resp::Nil),
        (
            b"|1\r\n+k\r\n:2\r\n*1\r\n$0\r\n\r\n",
            Resp::Attribute(
                vec![(Resp::Simple("k".into()), Resp::Int(2))],
                Box::new(Resp::Array(vec![Resp::Bulk(vec![])])),
            ),
        ),
    ];
    for (bytes, want) in cases {
        assert_eq!(&decode(bytes), want, "{}", String::from_utf8_lossy(bytes));
    }
}

#[test]
fn server_is_gone_after_drop() {
    let server = oracle();
    let (pid, dir, port) = (server.pid(), server.dir().to_path_buf(), server.port());
    assert!(pid_alive(pid));
    drop(server);
    assert!(!pid_alive(pid), "redis-server {pid} still alive after drop");
    assert!(!dir.exists());
    assert!(RawClient::try_connect(port, std::time::Duration::from_millis(200)).is_err());
}

#[test]
fn stop_kill9_and_plain_server() {
    let mut server = Server::start(ServerOpts::new(ModuleKind::None).config("maxmemory", "64mb"));
    assert!(server.is_running());
    let mut raw = server.raw();
    assert_eq!(
        raw.line("CONFIG GET maxmemory"),
        b"*2\r\n$9\r\nmaxmemory\r\n$8\r\n67108864\r\n"
    );
    let pid = server.pid();
    server.stop();
    assert!(!pid_alive(pid));
    server.restart();
    let pid = server.pid();
    server.kill9();
    assert!(!server.is_running() && !pid_alive(pid));
}
