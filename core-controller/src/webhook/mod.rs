//! The admission webhooks of the core: served over HTTPS with a certificate managed in process
//! ([`certs`]), decisions in [`admission`].
//!
//! Paths: `/mutate-modeldeployment`, `/validate-modeldeployment`,
//! `/validate-inferenceproviderconfig`.

pub mod admission;
pub mod certs;
pub mod nesting;
mod server;

pub use server::{WebhookOptions, start_webhooks};
