//! Why a request could not be forwarded, and the answer the client gets for it.

use std::fmt;

use worker::{Response, Result};

/// A request that could not be served. The client sees only a short fixed reason; the detail
/// (which may quote configuration or upstream errors) goes to the worker log.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The worker's configuration is unusable: every request fails until it is fixed.
    Config(String),
    /// The request cannot be mapped onto the origin.
    BadRequest(&'static str),
    /// The request's path or query cannot be forwarded.
    Target(edgewise::Error),
    /// The origin could not be reached or did not answer.
    Origin(String),
    /// The runtime refused to build the upstream request.
    Internal(String),
}

impl Failure {
    fn status(&self) -> u16 {
        match self {
            Failure::Config(_) | Failure::Internal(_) => 500,
            Failure::BadRequest(_) | Failure::Target(_) => 400,
            Failure::Origin(_) => 502,
        }
    }

    fn public_reason(&self) -> &'static str {
        match self {
            Failure::Config(_) => "edgewise: worker misconfigured",
            Failure::BadRequest(_) | Failure::Target(_) => "edgewise: request cannot be forwarded",
            Failure::Origin(_) => "edgewise: origin unreachable",
            Failure::Internal(_) => "edgewise: internal error",
        }
    }

    pub(crate) fn response(&self) -> Result<Response> {
        let mut response = Response::error(self.public_reason(), self.status())?;
        response
            .headers_mut()
            .set("content-type", "text/plain; charset=utf-8")?;
        Ok(response)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, detail): (&str, &dyn fmt::Display) = match self {
            Failure::Config(d) => ("configuration", d),
            Failure::BadRequest(d) => ("bad request", d),
            Failure::Target(d) => ("bad request", d),
            Failure::Origin(d) => ("origin", d),
            Failure::Internal(d) => ("internal", d),
        };
        write!(f, "{} ({what}): {detail}", self.status())
    }
}
