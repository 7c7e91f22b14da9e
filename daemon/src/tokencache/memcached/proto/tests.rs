use super::*;

const SPEND: [u8; 32] = [0xab; 32];

fn key() -> Key<'static> {
    Key {
        prefix: "ew:",
        spend: &SPEND,
    }
}

#[test]
fn spend_command_is_one_meta_add_with_value() {
    let mut out = String::new();
    encode_spend(&mut out, key(), 3600, 7);
    let hex = "ab".repeat(32);
    assert_eq!(out, format!("ms ew:{hex} 1 T3600 ME O7\r\n1\r\n"));
}

#[test]
fn expiry_is_relative_up_to_30_days_then_absolute() {
    let now = 1_800_000_000;
    assert_eq!(exptime(now, now + 60), 60);
    assert_eq!(exptime(now, now + RELATIVE_EXPIRY_LIMIT), 2_592_000);
    assert_eq!(
        exptime(now, now + RELATIVE_EXPIRY_LIMIT + 1),
        u32::try_from(now + RELATIVE_EXPIRY_LIMIT + 1).unwrap()
    );
    // Already expired keys still get a live record (a zero would mean "never expires").
    assert_eq!(exptime(now, now - 5), 1);
    // Never 2^31 or more, which memcached takes for a time long past (the record gone at
    // once, the token spendable again and again).
    assert_eq!(exptime(now, u64::MAX), 2_147_483_647);
    assert_eq!(exptime(now, 1 << 31), 2_147_483_647);
    assert_eq!(exptime(now, (1 << 31) - 1), 2_147_483_647);
}

#[test]
fn replies_parse_with_their_opaque() {
    assert_eq!(
        parse_reply(b"HD O12\r\nrest").unwrap(),
        Some((Reply::Stored { opaque: 12 }, 8))
    );
    assert_eq!(
        parse_reply(b"NS O4294967295\r\n").unwrap(),
        Some((Reply::NotStored { opaque: u32::MAX }, 16))
    );
    let (reply, used) = parse_reply(b"SERVER_ERROR out of memory storing object\r\n")
        .unwrap()
        .unwrap();
    assert_eq!(used, 43);
    assert!(matches!(reply, Reply::ServerError(m) if m.contains("out of memory")));
}

#[test]
fn partial_lines_wait_for_more() {
    assert_eq!(parse_reply(b"").unwrap(), None);
    assert_eq!(parse_reply(b"HD O1").unwrap(), None);
    assert_eq!(parse_reply(b"HD O1\r").unwrap(), None);
}

#[test]
fn untrustworthy_replies_are_errors() {
    for bad in [
        &b"HD\r\n"[..],
        b"NS Ox\r\n",
        b"EX O1\r\n",
        b"CLIENT_ERROR bad data chunk\r\n",
        b"ERROR\r\n",
        b"\r\n",
        b"\xff\xfe\r\n",
    ] {
        assert!(
            parse_reply(bad).is_err(),
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
    assert_eq!(
        parse_reply(&[b'x'; MAX_LINE + 1]),
        Err(ProtocolError::LineTooLong)
    );
}

#[test]
fn stats_reply_yields_eviction_counters() {
    let reply = b"STAT pid 1\r\nSTAT evictions 42\r\nSTAT curr_items 7\r\nSTAT bytes 700\r\n\
                  STAT limit_maxbytes 67108864\r\nSTAT version 1.6.18\r\nEND\r\n";
    let stats = parse_stats(reply).unwrap();
    assert_eq!(
        stats,
        ServerStats {
            evictions: 42,
            curr_items: 7,
            bytes: 700,
            limit_maxbytes: 67_108_864
        }
    );
    assert_eq!(parse_stats(b"STAT evictions 1\r\n"), None);
}
