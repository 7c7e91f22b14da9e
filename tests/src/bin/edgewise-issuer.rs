//! A test Privacy Pass issuer for demos and end-to-end tests: prints an issuer key, builds
//! TokenChallenges and mints type 0x0002 tokens with the `edgewise` crate's test issuer.
//!
//! ```text
//! edgewise-issuer key --key tests/data/test-issuer-key.pem
//! edgewise-issuer challenge --issuer issuer.example [--origin origin.example] [--context HEX]
//! edgewise-issuer token --key tests/data/test-issuer-key.pem --challenge B64URL [--count N]
//! ```
//!
//! `key` prints `{"token_key": <base64url SPKI>, "token_key_id": <hex>}`; `challenge` and
//! `token` print padded base64url, one value per line. Signing in the clear is only sound for a
//! test issuer: see `edgewise::Issuer`.

use std::process::ExitCode;

use base64::{
    Engine,
    alphabet::URL_SAFE,
    engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig},
};
use edgewise::{Issuer, TOKEN_TYPE_BLIND_RSA, TokenChallenge};
use rand_core::{OsRng, RngCore};

/// Padded on output (RFC 9577), padding optional on input.
const B64: GeneralPurpose = GeneralPurpose::new(
    &URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

const USAGE: &str = "usage:
  edgewise-issuer key --key PEM
  edgewise-issuer challenge --issuer NAME [--origin ORIGINS] [--context HEX32]
  edgewise-issuer token --key PEM --challenge B64URL [--count N]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(output) => {
            print!("{output}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("edgewise-issuer: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> Result<String, String> {
    let (command, options) = args.split_first().ok_or("no command")?;
    let options = Options::parse(options)?;
    match command.as_str() {
        "key" => key(&options),
        "challenge" => challenge(&options),
        "token" => token(&options),
        "-h" | "--help" | "help" => Ok(format!("{USAGE}\n")),
        other => Err(format!("unknown command {other:?}")),
    }
}

fn key(options: &Options) -> Result<String, String> {
    let issuer = load_issuer(options)?;
    let key = issuer.key();
    Ok(format!(
        "{{\"token_key\":\"{}\",\"token_key_id\":\"{}\"}}\n",
        B64.encode(key.spki()),
        hex(key.id())
    ))
}

fn challenge(options: &Options) -> Result<String, String> {
    let issuer = options.required("--issuer")?;
    let origin = options.get("--origin").unwrap_or_default();
    let context = options.get("--context").map(parse_context).transpose()?;
    let challenge = TokenChallenge::new(
        TOKEN_TYPE_BLIND_RSA,
        issuer.as_bytes(),
        context.as_ref(),
        origin.as_bytes(),
    )
    .map_err(|e| e.to_string())?;
    Ok(format!("{}\n", B64.encode(challenge.encode())))
}

fn token(options: &Options) -> Result<String, String> {
    let issuer = load_issuer(options)?;
    let encoded = B64
        .decode(options.required("--challenge")?.trim())
        .map_err(|_| "--challenge is not base64url")?;
    let challenge = TokenChallenge::decode(&encoded).map_err(|e| e.to_string())?;
    let count: usize = match options.get("--count") {
        Some(n) => n.parse().map_err(|_| "--count is not a number")?,
        None => 1,
    };
    let mut out = String::new();
    for _ in 0..count {
        let mut nonce = [0u8; 32];
        OsRng.fill_bytes(&mut nonce);
        let token = issuer
            .mint(&challenge, &nonce, &mut OsRng)
            .map_err(|e| e.to_string())?;
        out.push_str(&B64.encode(token));
        out.push('\n');
    }
    Ok(out)
}

fn load_issuer(options: &Options) -> Result<Issuer, String> {
    let path = options.required("--key")?;
    let pem = std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))?;
    Issuer::from_pkcs8_pem(&pem).map_err(|e| format!("{path}: {e}"))
}

fn parse_context(text: &str) -> Result<[u8; 32], String> {
    let bytes: Option<Vec<u8>> = (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect();
    bytes
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| "--context must be 64 hex digits".to_string())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `--name value` pairs.
struct Options(Vec<(String, String)>);

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let mut pairs = Vec::new();
        let mut rest = args.iter();
        while let Some(name) = rest.next() {
            if !name.starts_with("--") {
                return Err(format!("unexpected argument {name:?}"));
            }
            let value = rest.next().ok_or(format!("{name} needs a value"))?;
            pairs.push((name.clone(), value.clone()));
        }
        Ok(Options(pairs))
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn required(&self, name: &str) -> Result<&str, String> {
        self.get(name).ok_or(format!("{name} is required"))
    }
}
