//! Published test vectors, as data only.
//!
//! - `RFC9578_*`: RFC 9578 appendix A.2, "Issuance Protocol 2 - Blind RSA, 2048", all five
//!   vectors (one issuer key). Taken from the final revision of draft-ietf-privacypass-protocol
//!   in the IETF working group's repository (ietf-wg-privacypass/base-drafts), which the RFC
//!   publishes unchanged.
//! - `RFC9577_*`: RFC 9577 appendix A, the challenge/redemption structure vectors 1-5 and the
//!   HTTP header vectors, from draft-ietf-privacypass-auth-scheme in the same repository. Header
//!   lines are joined where the document folds them.

/// skS: the issuer's PKCS#8 private key (a published test key). Only the `issuer` tests sign;
/// the allow is unconditional so that the benchmarks can include this file as it is.
#[allow(dead_code)]
pub(super) const RFC9578_SK_PEM: &str = "\
-----BEGIN PRIVATE KEY-----\n\
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDLGu1rapX1sc4B\n\
Okz8qyW5Sy5kojA05CUKfqtDwN86jBKZOvErERkI1LRxvsMdS2ya2c3akGEqLukD\n\
Uj5t5aIk1rAvCeXDdNDP4B2PUpxQCnii9nkI+mgrWitDDIHq8a9y17XnlPyYoxOS\n\
doeXV85FO1Ju+b9s65mXm4QjuQ9EYaIq83qrDPVzP3WXq+RNMccy22ihgcbLvmB9\n\
jA5S4GVf2ZltxYTsoL6Hr7zXijN9F7Hbqegou9geKRMXFE5/+J9VYZcJsJbLuepH\n\
TOrSZMIHP+SXQMAfAOEJEGBmmD0h5fg/CG4ugjyHnNQ873ANKjUqm6vWEtA8rQLb\n\
E0t+IlpfAgMBAAECggEALzCbdzi1jPd58MkV+CLfyfSQ2+rfHnrfrFeP/VcDxrui\n\
2p1aSXJYibe6ES+Mb/MFUdlHPgALw1xQ4Werf6c6DCshllxLWSV8GsBsvc8o6GP2\n\
cY6owpBDwcbahGKUkP0Ekb9S0XLJWcGSG5aUnHJXR7inx4cZlfoLnrEQe6hUxsMq\n\
b0dHxdHDBMdGfVWwgKojOjpS/98mEUy7VB/6a2lreglvjc/2nKCKtY77D7dTqlGF\n\
xzABaWu86MCZ4/Q13Lv+BefbqtI9sqZZwjrdUhQH8VCxry2QVMQWQinWhAt6MqT4\n\
SBSTrolZzwrqje8MPJ91uaNMdXGLcHLI26sXzv7KSQKBgQDvcwsPUUvA9Z2ZX9X5\n\
mIxMTBNdEFzVbUPuKKA1yWn1UMDNcUjqh+ze/7k3yFxkh0QF31bq60eL90GISiAO\n\
5KOWM9EKo+xAQ2baK1MfOY1G+8jzBXUpBs94k53S88yXmK6nydgv70BJ8Zh5fkUq\n\
W20oSbhkhjRdSzH2kRGirg+USwKBgQDZJMnry2Exa/3Eq7PbosxAPMiYnk5JAPSG\n\
y2z0Z7TUb+uHQO/+xPM7nC0uyLIMD9laTMHwn6s7/LbGoEP1WRgpoYH/B14k/Rn6\n\
fuwRN62Io9tc9+ACLtUB7vtGay3+gRwYtSC2b5ed8lIiegtTkea0h0uDSRxAtVs3\n\
n5kya2Q9vQKBgFJuFzOZt+tgYnWnQUEgW8P0OIJEHME4UTdOcwCxKrHRr93JjuF2\n\
E3wdKoTii7PrwOYIoaJThpjPcJbbdbfKy+nsQp1YGv9wdJrMaVwJcvIpwV6v1Upf\n\
VtLadm1lklvpqs6GNM8jnM0Xx3ajmmnfeW9yGXE5phMrzLJl9F09cI2LAoGBANXv\n\
ugVXrp2bsT1okd6uSaBsgpJjPewNRd3cZK9z0aSP1DTA1PNkpeQwHg/+6fSaVOHz\n\
yAxDs9h5RrbxRaNfsT+rAUH7x1SYDVVQYVMhURbToZe6G/jqnTC3fNfHV1xtZfot\n\
0loMHgwep6+SIMCoee2ZctuZV32lcIaf9rbHOc7dAoGAeQ8k8SILNG6DOA31TE5P\n\
m01AJIYw7AlR3uo/RNaC+xYdPU3TskuALxxiDR/WsLEQBCjkFWmmJAWnQUDtbnYN\n\
ScwR8G2J6FnrECtbtys73WAVGooFZncmPLP8lxLyblSBDELyaZv/bAsPlMO9bD5c\n\
J+NSBaa+oiLl1wmCa5MCflc=\n\
-----END PRIVATE KEY-----\n\
";

/// pkS: the RFC 9578 PSS-form SubjectPublicKeyInfo, hex.
pub(super) const RFC9578_PK_HEX: &str = "\
    30820152303d06092a864886f70d01010a3030a00d300b0609608648016503040202a11a301806092a864886\
    f70d010108300b0609608648016503040202a2030201300382010f003082010a0282010100cb1aed6b6a95f5\
    b1ce013a4cfcab25b94b2e64a23034e4250a7eab43c0df3a8c12993af12b111908d4b471bec31d4b6c9ad9cd\
    da90612a2ee903523e6de5a224d6b02f09e5c374d0cfe01d8f529c500a78a2f67908fa682b5a2b430c81eaf1\
    af72d7b5e794fc98a3139276879757ce453b526ef9bf6ceb99979b8423b90f4461a22af37aab0cf5733f7597\
    abe44d31c732db68a181c6cbbe607d8c0e52e0655fd9996dc584eca0be87afbcd78a337d17b1dba9e828bbd8\
    1e291317144e7ff89f55619709b096cbb9ea474cead264c2073fe49740c01f00e109106066983d21e5f83f08\
    6e2e823c879cd43cef700d2a352a9babd612d03cad02db134b7e225a5f0203010001";

/// One issuance: (token_challenge, nonce, salt, token), hex.
pub(super) struct BlindRsaVector {
    pub(super) challenge: &'static str,
    pub(super) nonce: &'static str,
    /// Used by the `issuer` tests only.
    #[allow(dead_code)]
    pub(super) salt: &'static str,
    pub(super) token: &'static str,
}

pub(super) const RFC9578_VECTORS: [BlindRsaVector; 5] = [
    BlindRsaVector {
        challenge: "\
            0002000e6973737565722e6578616d706c65208e7acc900e393381e8810b7c9e4a68b5163f1f880ab6688a6f\
            fe780923609e88000e6f726967696e2e6578616d706c65",
        nonce: "aa72019d1f951df197021ce63876fe8b0a02dc1c31a12b0a2dd1508d07827f05",
        salt: "\
            3d980852fa570c064204feb8d107098db976ef8c2137e8641d234bbd88a986fdb306a7af220cfadede08f51e\
            1ef61766",
        token: "\
            0002aa72019d1f951df197021ce63876fe8b0a02dc1c31a12b0a2dd1508d07827f055969f643b4cfda5196d4\
            aa86aeb5368834f4f06de46950ed435b3b81bd036d44ca572f8982a9ca248a3056186322d93ca147266121dd\
            eb5632c07f1f71cd2708bc6a21b533d07294b5e900faf5537dd3eb33cee4e08c9670d1e5358fd184b0e00c63\
            7174f5206b14c7bb0e724ebf6b56271e5aa2ed94c051c4a433d302b23bc52460810d489fb050f9de5c868c6c\
            1b06e3849fd087629f704cc724bc0d0984d5c339686fcdd75f9a9cdd25f37f855f6f4c584d84f716864f546b\
            696d620c5bd41a811498de84ff9740ba3003ba2422d26b91eb745c084758974642a42078201543246ddb5803\
            0ea8e722376aa82484dca9610a8fb7e018e396165462e17a03e40ea7e128c090a911ecc708066cb201833010\
            c1ebd4e910fc8e27a1be467f78671836a508257123a45e4e0ae2180a434bd1037713466347a8ebe46439d3da\
            1970",
    },
    BlindRsaVector {
        challenge: "0002000e6973737565722e6578616d706c6500000e6f726967696e2e6578616d706c65",
        nonce: "98c1345ff38a554b429b428b0f206cfe4f3892f8041995f2c24873d90e84488d",
        salt: "\
            b6b4378421ab0ea677ce3f4036fd0489dee458ad81ea519c3e8bde3fcd5ec1505d28e110d7b44dcac5e04ece\
            dd54d11a",
        token: "\
            000298c1345ff38a554b429b428b0f206cfe4f3892f8041995f2c24873d90e84488d11e15c91a7c2ad02abd6\
            6645802373db1d823bea80f08d452541fb2b62b5898bca572f8982a9ca248a3056186322d93ca147266121dd\
            eb5632c07f1f71cd27083350a206c5e9b7c0898f97611ce0bb8d74d310bb194ab67e094e32ff6da90886924b\
            1b9e7b569402c1101d896d2fc3a7371ef77f02310db1dc9f81c8535828c2d0e9d9051720d182cd54e1c2c3bf\
            417da2fc7aa72bb70ccc834ef274a2e809c9821b3d395d6535423f7428b3f29175d6eb840b4b7685336e57e2\
            b6afeaabc0c17ea4f557e8a9cc2f624e245c6ccd7cbdd6c32c97c5c6974e802f688e2d25f0aba4215f609f69\
            2244517d5d3407e0172273982c001c158f5fcbe1b5d2447c26a87e89f5a9e72b498b0c59ce749823d2cf253d\
            3cf6cd4e64fa0e434d95e488789247a9ceed756ff4ff33a8d2402c0db381236d331092838b608a4200255209\
            2897",
    },
    BlindRsaVector {
        challenge: "0002000e6973737565722e6578616d706c65000017666f6f2e6578616d706c652c6261722e6578616d706c65",
        nonce: "9e7a22bdc5d715682434cebc07eb5fa53f622f776a17a6d91757af1592df0e71",
        salt: "\
            c847b5d0fa9101a1e09954ac9f3eed6600af58936295ad2e54274e13e640d59f732d07530c94c19c20668f03\
            470c77ac",
        token: "\
            00029e7a22bdc5d715682434cebc07eb5fa53f622f776a17a6d91757af1592df0e710042eee45ac4dd5acb8f\
            6e65c4d8dd47504f73f7463507ef96a4d7227d2774f3ca572f8982a9ca248a3056186322d93ca147266121dd\
            eb5632c07f1f71cd270815b010bbc0d5f55e9c856d2e9ffaefba007d33c2d5452fbeb0b15919b973e0dc9180\
            aaeb18242043758d9fb0ac9ac5e04da9ff74ec93644ae6cdb7068ea76ce2295b9b95e383ed3a9856e9f618da\
            fdf4cec5d2b53ea4297c2f3990babca71e3ccd6c07a437daae7ed27b6b81178fb7ce5fa5dd63781cc64ac1e4\
            10f441c034b0a5cc873a2ce875e8b38c92bab563635c4f8f4fa35d1f582ef19edf7da75aa11a503a82e32a12\
            bd4da41e0ca7ec7f451caf586f5b910003fcbbb9ff5ffa2408c28d6807737d03da651ea9bfafcc2747a6830e\
            19a1d160fcd5c25d2f79dad86a8b3de8e926e08ca1addced72977f7b56398ef59c26e725df0a976a08f2a936\
            ca42",
    },
    BlindRsaVector {
        challenge: "0002000e6973737565722e6578616d706c65000000",
        nonce: "494dae41fc7e300c2d09990afcd5d5e1fc95305337dc12f78942c45340bfe8e6",
        salt: "\
            49912979f1bf528e5b8228ab1328df74319dce7bdaf45821ceb1100dcf042a2dfe852fc9db59b64a5f6493c2\
            82504240",
        token: "\
            0002494dae41fc7e300c2d09990afcd5d5e1fc95305337dc12f78942c45340bfe8e6b741ec1b6fd05f1e95f8\
            982906aec1612896d9ca97d53eef94ad3c9fe023f7a4ca572f8982a9ca248a3056186322d93ca147266121dd\
            eb5632c07f1f71cd2708a55c83dc04292b5d92add1a87b37e54f22f61c58840586f390c50b231824423378dd\
            cf50e69dc817d45bfad06c7f2a0ac35d2acd7f26b0bc9954c192b0a0ef28a2a5650e390098dd3cb1166a7cb1\
            716d3dd2d19dc5ca3b1ea6206359de0002d82bc4fa7e69fb07214b06addcbd2203d1e17f57fc580bcc5a13e0\
            ac15cf942182cc2b5d6eaa737a712704114e357e2ec2f10047463ded02a1a0766dc346dd7212b9711e03ac95\
            eb258ac1164104dc9a0d3e738ae742ab5ed8c5139fc07145a788b9f891741ee68f0a66782b7b84a9bb4cb4b3\
            d1b26b67106f397b35b641d882d7b0185168946de898ef72349a44a47dbdd6d46e9ba9ba543d5701b65c63d6\
            45c2",
    },
    BlindRsaVector {
        challenge: "\
            0002000e6973737565722e6578616d706c65208e7acc900e393381e8810b7c9e4a68b5163f1f880ab6688a6f\
            fe780923609e880000",
        nonce: "a1aa8b371c37c9a8ddbd7342ab4f9dd5227d5b1600dca6517b60f63143cd43a3",
        salt: "\
            35c04710ce866d879447b6230ce098a49e81be5c067881cce7bd5f92c1e5bd9b3c7d4d795cfad134fdfe916d\
            735a624a",
        token: "\
            0002a1aa8b371c37c9a8ddbd7342ab4f9dd5227d5b1600dca6517b60f63143cd43a3bb8a8cf1c59e7a251358\
            ed76fe0ccff61044bc79dd261f16020324d22f2d434cca572f8982a9ca248a3056186322d93ca147266121dd\
            eb5632c07f1f71cd27082899f4bc385b4147a650a3e7efc7d23a743cb944bb53e2ed8b88ee03a9c0b1cf1f73\
            fd7f15c1bd1f850a5a96a34d4ee9f295543f30ac920825e9a0ce26e924f2c145583019dd14408c565b660e8b\
            702fbea559908b1a8c8f9d21ef22f7cc6a4641c57c146e6c5497d2890ca230a6749f5f83a8fdd79eba0722f1\
            0dff9e81a2fb2d05fa4d989acc2e93f595ae69c98c3daa3b169efcdd6e59596b2f049f16ba49528761f66103\
            2da65a3ee0fe8a22409766e90daf8c60323c16522818c49273c795f26bbab306dc63cfc16fe1702af2464028\
            cf819cc647d6f9b8a8f54d7d6585a268fdb8c75f76618c64aba266836a3b2db7cdd739815a021d7ff2b36ef9\
            1f23",
    },
];

/// Challenge and redemption structure: (issuer_name, redemption_context, origin_info, nonce,
/// token_key_id, token_authenticator_input), hex, token type 0x0002.
pub(super) struct StructureVector {
    pub(super) issuer_name: &'static str,
    pub(super) redemption_context: &'static str,
    pub(super) origin_info: &'static str,
    pub(super) nonce: &'static str,
    pub(super) token_key_id: &'static str,
    pub(super) token_authenticator_input: &'static str,
}

pub(super) const RFC9577_STRUCTURE_VECTORS: [StructureVector; 5] = [
    StructureVector {
        issuer_name: "6973737565722e6578616d706c65",
        redemption_context: "476ac2c935f458e9b2d7af32dacfbd22dd6023ef5887a789f1abe004e79bb5bb",
        origin_info: "6f726967696e2e6578616d706c65",
        nonce: "e01978182c469e5e026d66558ee186568614f235e41ef7e2378e6f202688abab",
        token_key_id: "ca572f8982a9ca248a3056186322d93ca147266121ddeb5632c07f1f71cd2708",
        token_authenticator_input: "\
            0002e01978182c469e5e026d66558ee186568614f235e41ef7e2378e6f202688abab8e1d5518ec8296425552\
            6efd8f9db88205a8ddd3ffb1db298fcc3ad36c42388fca572f8982a9ca248a3056186322d93ca147266121dd\
            eb5632c07f1f71cd2708",
    },
    StructureVector {
        issuer_name: "6973737565722e6578616d706c65",
        redemption_context: "",
        origin_info: "6f726967696e2e6578616d706c65",
        nonce: "e01978182c469e5e026d66558ee186568614f235e41ef7e2378e6f202688abab",
        token_key_id: "ca572f8982a9ca248a3056186322d93ca147266121ddeb5632c07f1f71cd2708",
        token_authenticator_input: "\
            0002e01978182c469e5e026d66558ee186568614f235e41ef7e2378e6f202688abab11e15c91a7c2ad02abd6\
            6645802373db1d823bea80f08d452541fb2b62b5898bca572f8982a9ca248a3056186322d93ca147266121dd\
            eb5632c07f1f71cd2708",
    },
    StructureVector {
        issuer_name: "6973737565722e6578616d706c65",
        redemption_context: "",
        origin_info: "",
        nonce: "e01978182c469e5e026d66558ee186568614f235e41ef7e2378e6f202688abab",
        token_key_id: "ca572f8982a9ca248a3056186322d93ca147266121ddeb5632c07f1f71cd2708",
        token_authenticator_input: "\
            0002e01978182c469e5e026d66558ee186568614f235e41ef7e2378e6f202688ababb741ec1b6fd05f1e95f8\
            982906aec1612896d9ca97d53eef94ad3c9fe023f7a4ca572f8982a9ca248a3056186322d93ca147266121dd\
            eb5632c07f1f71cd2708",
    },
    StructureVector {
        issuer_name: "6973737565722e6578616d706c65",
        redemption_context: "476ac2c935f458e9b2d7af32dacfbd22dd6023ef5887a789f1abe004e79bb5bb",
        origin_info: "",
        nonce: "e01978182c469e5e026d66558ee186568614f235e41ef7e2378e6f202688abab",
        token_key_id: "ca572f8982a9ca248a3056186322d93ca147266121ddeb5632c07f1f71cd2708",
        token_authenticator_input: "\
            0002e01978182c469e5e026d66558ee186568614f235e41ef7e2378e6f202688ababb85fb5bc06edeb0e8e8b\
            db5b3bea8c4fa40837c82e8bcaf5882c81e14817ea18ca572f8982a9ca248a3056186322d93ca147266121dd\
            eb5632c07f1f71cd2708",
    },
    StructureVector {
        issuer_name: "6973737565722e6578616d706c65",
        redemption_context: "476ac2c935f458e9b2d7af32dacfbd22dd6023ef5887a789f1abe004e79bb5bb",
        origin_info: "666f6f2e6578616d706c652c6261722e6578616d706c65",
        nonce: "e01978182c469e5e026d66558ee186568614f235e41ef7e2378e6f202688abab",
        token_key_id: "ca572f8982a9ca248a3056186322d93ca147266121ddeb5632c07f1f71cd2708",
        token_authenticator_input: "\
            0002e01978182c469e5e026d66558ee186568614f235e41ef7e2378e6f202688ababa2a775866b6ae0f98944\
            910c8f48728d8a2735b9157762ddbf803f70e2e8ba3eca572f8982a9ca248a3056186322d93ca147266121dd\
            eb5632c07f1f71cd2708",
    },
];

/// The three WWW-Authenticate values of the header vectors.
pub(super) const RFC9577_HEADERS: [&str; 3] = [
    "\
        PrivateToken challenge=\"AAIADmlzc3Vlci5leGFtcGxlIIo-g6M9mABdLzC-9Bn6a_TNXGAF42sShbu0zNQP\
        pLODAA5vcmlnaW4uZXhhbXBsZQ==\", token-key=\"MIIBUjA9BgkqhkiG9w0BAQowMKANMAsGCWCGSAFlAwQCAq\
        EaMBgGCSqGSIb3DQEBCDALBglghkgBZQMEAgKiAwIBMAOCAQ8AMIIBCgKCAQEAyxrta2qV9bHOATpM_KsluUsuZK\
        IwNOQlCn6rQ8DfOowSmTrxKxEZCNS0cb7DHUtsmtnN2pBhKi7pA1I-beWiJNawLwnlw3TQz-Adj1KcUAp4ovZ5CP\
        poK1orQwyB6vGvcte155T8mKMTknaHl1fORTtSbvm_bOuZl5uEI7kPRGGiKvN6qwz1cz91l6vkTTHHMttooYHGy7\
        5gfYwOUuBlX9mZbcWE7KC-h6-814ozfRex26noKLvYHikTFxROf_ifVWGXCbCWy7nqR0zq0mTCBz_kl0DAHwDhCR\
        BgZpg9IeX4PwhuLoI8h5zUPO9wDSo1Kpur1hLQPK0C2xNLfiJaXwIDAQAB\",unknownChallengeAttribute=\"i\
        gnore-me\", max-age=\"10\"",
    "\
        PrivateToken challenge=\"AAIADmlzc3Vlci5leGFtcGxlIIo-g6M9mABdLzC-9Bn6a_TNXGAF42sShbu0zNQP\
        pLODAA5vcmlnaW4uZXhhbXBsZQ==\", token-key=\"MIIBUjA9BgkqhkiG9w0BAQowMKANMAsGCWCGSAFlAwQCAq\
        EaMBgGCSqGSIb3DQEBCDALBglghkgBZQMEAgKiAwIBMAOCAQ8AMIIBCgKCAQEAyxrta2qV9bHOATpM_KsluUsuZK\
        IwNOQlCn6rQ8DfOowSmTrxKxEZCNS0cb7DHUtsmtnN2pBhKi7pA1I-beWiJNawLwnlw3TQz-Adj1KcUAp4ovZ5CP\
        poK1orQwyB6vGvcte155T8mKMTknaHl1fORTtSbvm_bOuZl5uEI7kPRGGiKvN6qwz1cz91l6vkTTHHMttooYHGy7\
        5gfYwOUuBlX9mZbcWE7KC-h6-814ozfRex26noKLvYHikTFxROf_ifVWGXCbCWy7nqR0zq0mTCBz_kl0DAHwDhCR\
        BgZpg9IeX4PwhuLoI8h5zUPO9wDSo1Kpur1hLQPK0C2xNLfiJaXwIDAQAB\",unknownChallengeAttribute=\"i\
        gnore-me\", max-age=\"10\", PrivateToken challenge=\"AAEADmlzc3Vlci5leGFtcGxlIIo-g6M9mABdLzC\
        -9Bn6a_TNXGAF42sShbu0zNQPpLODAA5vcmlnaW4uZXhhbXBsZQ==\", token-key=\"67H-0zgxA2HAjQx1dpaWc\
        SluBemaF9eSbfwopT-r1In6wPgryoYkmmaPOlv6s3TJ\",unknownChallengeAttribute=\"ignore-me\", max-\
        age=\"10\"",
    "\
        Basic realm=\"grease\", PrivateToken challenge=\"AACsw7JXlcY2_Z3YsSmCOUq7qHd9NZeOh3_IhIiSoh\
        cjMEWsJaPVXAfFTv5jcpc_7gBz53_GG_GauIDyDt9dYnUC\",token-key=\"hW3jxxC4kufMoa5esSGvQsqOd5E3o\
        RIkIoybmbBym_hNUFfQMAADCbjw0GzP-hdWH56s1MMS6YWmvGD_vqBhAmTcsXJiVTE9qB1mVpJoah2GRPFRa_YSz\
        qAJ5t_22ampWftTjhtbI0PAkpkpQjgr3eItWzJLHkYY7SHXgGKGws4=\",PrivateToken challenge=\"AAEADml\
        zc3Vlci5leGFtcGxlIIo-g6M9mABdLzC-9Bn6a_TNXGAF42sShbu0zNQPpLODAA5vcmlnaW4uZXhhbXBsZQ==\", \
        token-key=\"67H-0zgxA2HAjQx1dpaWcSluBemaF9eSbfwopT-r1In6wPgryoYkmmaPOlv6s3TJ\",unknownChal\
        lengeAttribute=\"ignore-me\", max-age=\"10\"",
];

/// token-challenge-0 of every header vector but the grease one, hex.
pub(super) const RFC9577_HEADER_CHALLENGE_HEX: &str = "\
    0002000e6973737565722e6578616d706c65208a3e83a33d98005d2f30bef419fa6bf4cd5c6005e36b1285bb\
    b4ccd40fa4b383000e6f726967696e2e6578616d706c65";
