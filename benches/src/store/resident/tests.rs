use super::*;

#[test]
fn sums_rss_anonymous_and_the_store_mappings() {
    let smaps = "\
55d0-55d1 r-xp 00000000 08:01 12 /usr/bin/x
Rss:                   8 kB
Anonymous:             0 kB
7f00-7f10 r--s 00000000 00:1a 99 /dev/shm/b/edgewise/data_0
Size:               4096 kB
Rss:                1000 kB
Anonymous:             0 kB
7f20-7f30 rw-p 00000000 00:00 0 
Rss:                  16 kB
Anonymous:            16 kB
7f40-7f50 r--s 00000000 00:1a 98 /dev/shm/b/edgewise/data_1 (deleted)
Rss:                   4 kB
";
    let r = parse(smaps, Path::new("/dev/shm/b/edgewise"));
    assert_eq!(
        r,
        Resident {
            rss: 1028 << 10,
            anonymous: 16 << 10,
            store: 1004 << 10
        }
    );
}
