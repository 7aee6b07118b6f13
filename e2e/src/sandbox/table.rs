//! The sandbox's status table (pure).

use airunway_api::constants::condition_types;
use airunway_api::v1alpha1::{ConditionStatus, ModelDeployment, Phase};

/// One row: what a user wants to know about a deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Name.
    pub name: String,
    /// Resolved engine.
    pub engine: String,
    /// Selected provider.
    pub provider: String,
    /// Why that provider.
    pub reason: String,
    /// Phase.
    pub phase: String,
    /// `<Kind>/<name>` of the upstream object.
    pub upstream: String,
}

/// The row of a deployment.
pub fn row(md: &ModelDeployment) -> Row {
    let status = md.status.clone().unwrap_or_default();
    let provider = status.provider.clone().unwrap_or_default();
    let dash = |s: Option<String>| {
        s.filter(|s| !s.is_empty())
            .unwrap_or_else(|| "-".to_string())
    };
    Row {
        name: md.metadata.name.clone().unwrap_or_default(),
        engine: dash(md.resolved_engine().map(|e| e.to_string())),
        provider: dash(provider.name.clone()),
        reason: dash(provider.selected_reason.clone()),
        phase: dash(status.phase.map(|p| p.to_string())),
        upstream: match (provider.resource_kind, provider.resource_name) {
            (Some(kind), Some(name)) => format!("{kind}/{name}"),
            _ => "-".to_string(),
        },
    }
}

/// Renders rows as an aligned table with a header.
pub fn render(rows: &[Row]) -> String {
    let header = Row {
        name: "NAME".into(),
        engine: "ENGINE".into(),
        provider: "PROVIDER".into(),
        reason: "SELECTED REASON".into(),
        phase: "PHASE".into(),
        upstream: "UPSTREAM".into(),
    };
    let all: Vec<&Row> = std::iter::once(&header).chain(rows).collect();
    let width = |f: fn(&Row) -> &str| all.iter().map(|r| f(r).len()).max().unwrap_or(0);
    let widths = [
        width(|r| &r.name),
        width(|r| &r.engine),
        width(|r| &r.provider),
        width(|r| &r.reason),
        width(|r| &r.phase),
    ];
    all.iter()
        .map(|r| {
            format!(
                "{:w0$}  {:w1$}  {:w2$}  {:w3$}  {:w4$}  {}",
                r.name,
                r.engine,
                r.provider,
                r.reason,
                r.phase,
                r.upstream,
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2],
                w3 = widths[3],
                w4 = widths[4],
            )
            .trim_end()
            .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Providers whose upstream operator is Kubernetes itself (the deployment controller, with
/// KWOK running the Pods): their deployments reach `Running` in the sandbox, simulated or not.
pub const KUBERNETES_NATIVE: [&str; 2] = ["llmd", "vllm"];

/// Whether every deployment in `expected` has settled: `Running` when upstream operators are
/// simulated or the provider's upstream is Kubernetes itself ([`KUBERNETES_NATIVE`]), else
/// `Deploying` (or `Running`) with its upstream object created, or `Pending` with the core's
/// reason.
pub fn settled(deployments: &[ModelDeployment], expected: &[String], simulated: bool) -> bool {
    expected.iter().all(|name| {
        deployments
            .iter()
            .find(|md| md.metadata.name.as_deref() == Some(name.as_str()))
            .is_some_and(|md| {
                let status = md.status.clone().unwrap_or_default();
                let created = status
                    .provider
                    .as_ref()
                    .and_then(|p| p.resource_name.as_ref())
                    .is_some();
                let native = status
                    .provider
                    .as_ref()
                    .and_then(|p| p.name.as_deref())
                    .is_some_and(|p| KUBERNETES_NATIVE.contains(&p));
                match (simulated || native, status.phase) {
                    (true, Some(Phase::Running)) => true,
                    (true, _) => false,
                    (false, Some(Phase::Deploying | Phase::Running)) => created,
                    // No provider can take it (KAITO's is not ready without a KAITO
                    // controller): settled once the core said so.
                    (false, Some(Phase::Pending)) => md
                        .condition(condition_types::PROVIDER_SELECTED)
                        .is_some_and(|c| c.status == ConditionStatus::False),
                    _ => false,
                }
            })
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn renders_aligned_rows() {
        let md: ModelDeployment = serde_json::from_value(serde_json::json!({
            "apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "metadata": {"name": "gemma-cpu"},
            "spec": {"model": {"id": "a/b"}, "engine": {"type": "llamacpp"}},
            "status": {"phase": "Running", "provider": {"name": "kaito", "selectedReason": "matched capabilities: engine=llamacpp, gpu=false, mode=aggregated",
                "resourceKind": "Workspace", "resourceName": "gemma-cpu"}}
        }))
        .unwrap();
        let table = render(&[row(&md)]);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("NAME       ENGINE    PROVIDER  SELECTED REASON"));
        assert!(
            lines[1].ends_with("Running  Workspace/gemma-cpu"),
            "{table}"
        );
        assert!(settled(
            std::slice::from_ref(&md),
            &["gemma-cpu".into()],
            true
        ));
        assert!(settled(&[md], &["gemma-cpu".into()], false));
    }
}
