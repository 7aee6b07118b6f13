//! The dry-run preview (annotation [`annotations::DRY_RUN`]): a deployment that asks for it is
//! rendered and checked as for a deployment, but nothing is applied, pruned or recreated
//! upstream. The render goes into the ConfigMap `<name>-preview` (owned by the deployment, as
//! controller), a `DryRunRendered` event lists what it holds, and the status says it is a
//! preview (`Ready=False` and `ResourceCreated=False` with reason `DryRun`, phase `Pending`,
//! `Stalled=True`: it waits for someone to remove the annotation). Removing the annotation
//! deploys for real and deletes the ConfigMap.
//!
//! [`decide`] is pure; [`act`] and [`remove_preview`] are the I/O.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PatchParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

use super::checked_render::Checked;
use super::context::Context;
use super::desired::{DesiredUpstream, ProviderStatus, is_subset};
use super::error::{ReconcileError, api_error};
use super::status_write;
use super::statuses::{Hold, HoldCause, compatible};
use super::traits::{PreparationHold, Provider};
use crate::apply_body;
use crate::constants::{annotations, dry_run, event_actions, event_reasons, labels, reasons};
use crate::v1alpha1::{ModelDeployment, NotReadyReason, Phase};

/// Whether `md` asks for a dry run (annotation [`annotations::DRY_RUN`] is `"true"`).
pub fn requested(md: &ModelDeployment) -> bool {
    md.is_dry_run()
}

/// Whether the deployment's status says a preview was written (`status.notReady.reason` is
/// `DryRun`): once the annotation is gone (or the preview cannot be rendered any more), its
/// ConfigMap is deleted.
pub fn shows_preview(md: &ModelDeployment) -> bool {
    md.status
        .as_ref()
        .and_then(|s| s.not_ready.as_ref())
        .is_some_and(|n| n.reason == NotReadyReason::DryRun)
}

/// The name of the preview ConfigMap of the deployment `name`.
pub fn config_map_name(name: &str) -> String {
    format!("{name}{}", dry_run::CONFIG_MAP_SUFFIX)
}

/// What a dry run of a deployment does.
#[derive(Clone, Debug, PartialEq)]
pub enum DryRun {
    /// Nothing can be rendered (incompatible, storage not ready, a missing CRD, a render
    /// error, a preparation hold): show the hold's status, as a deployment would.
    Hold(Hold),
    /// The render, to write into the preview ConfigMap.
    Preview(Preview),
}

/// A deployment's render as a preview.
#[derive(Clone, Debug, PartialEq)]
pub struct Preview {
    /// The preview ConfigMap's name.
    pub name: String,
    /// The ConfigMap's apply body (labels, controller owner reference, the render).
    pub config_map: Value,
    /// The event's message: how many objects, their kinds and names.
    pub summary: String,
    /// The provider-owned status saying it is a preview.
    pub status: ProviderStatus,
}

/// The dry run of `md` from the [checked render](super::checked_render::checked_render)
/// `checked` (and the hold [`Provider::prepare`] returned, which comes first, as in
/// [`plan::plan`](super::plan::plan)).
pub fn decide<P: Provider>(
    provider: &P,
    md: &ModelDeployment,
    prepare_hold: Option<&PreparationHold>,
    checked: Result<Checked, Box<Hold>>,
) -> DryRun {
    if let Some(hold) = prepare_hold {
        return DryRun::Hold(Hold {
            cause: HoldCause::Prepare,
            status: super::statuses::prepare_held(provider, hold),
        });
    }
    let checked = match checked {
        Ok(checked) => checked,
        Err(hold) => return DryRun::Hold(*hold),
    };
    let name = config_map_name(&md.name_any());
    let objects: Vec<String> = checked
        .desired
        .iter()
        .map(|d| format!("{} {}", d.kind(), d.name()))
        .collect();
    let count = objects.len();
    let noun = if count == 1 { "object" } else { "objects" };
    let summary = format!(
        "Dry run: rendered {count} {noun} into ConfigMap {name}: {}",
        objects.join(", ")
    );
    let message = format!(
        "Dry run: rendered {count} {noun} into ConfigMap {name}; remove the {} annotation to deploy",
        annotations::DRY_RUN
    );
    let status = ProviderStatus::not_deployed(
        Phase::Pending,
        message.clone(),
        compatible(provider),
        (reasons::DRY_RUN, message),
    );
    DryRun::Preview(Preview {
        config_map: config_map(md, provider.name(), &name, &checked.desired),
        name,
        summary,
        status,
    })
}

/// The preview ConfigMap's apply body.
fn config_map(
    md: &ModelDeployment,
    provider: &str,
    name: &str,
    desired: &[DesiredUpstream],
) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": md.namespace(),
            "labels": {
                labels::MANAGED_BY: labels::MANAGED_BY_VALUE,
                labels::DEPLOYMENT: md.name_any(),
            },
            "ownerReferences": [{
                "apiVersion": crate::constants::API_VERSION,
                "kind": "ModelDeployment",
                "name": md.name_any(),
                "uid": md.metadata.uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "data": {
            dry_run::RENDER_KEY: render_yaml(desired),
            dry_run::PROVIDER_KEY: provider,
        },
    })
}

/// The objects as a YAML stream (`---` between documents); an object YAML cannot be written
/// for (none is known) is written as JSON, which YAML reads too.
fn render_yaml(desired: &[DesiredUpstream]) -> String {
    desired
        .iter()
        .map(|d| serde_saphyr::to_string(&d.object).unwrap_or_else(|_| format!("{}\n", d.object)))
        .collect::<Vec<_>>()
        .join("---\n")
}

/// Whether the live preview ConfigMap already holds what `desired` writes (then nothing is
/// written and no event is published).
pub fn unchanged(desired: &Value, live: Option<&Value>) -> bool {
    live.is_some_and(|live| {
        live["data"] == desired["data"]
            && is_subset(&desired["metadata"]["labels"], &live["metadata"]["labels"])
            && is_subset(
                &desired["metadata"]["ownerReferences"],
                &live["metadata"]["ownerReferences"],
            )
    })
}

/// Carries out `decision`: the hold's status (the preview of an earlier render deleted), or
/// the preview ConfigMap written when it changed (server-side apply with the provider's field
/// manager, and a `DryRunRendered` event) and the status saying it is a preview.
pub(super) async fn act<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    namespace: &str,
    decision: DryRun,
) -> Result<Action, ReconcileError> {
    match decision {
        DryRun::Hold(Hold { cause, status }) => {
            if let Some(category) = cause.error_category() {
                ctx.metrics.error(category);
            }
            remove_preview(md, ctx, namespace).await?;
            status_write::write(md, ctx, &status).await?;
        }
        DryRun::Preview(preview) => {
            let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), namespace);
            let name = &preview.name;
            let live = api
                .get_opt(name)
                .await
                .map_err(api_error(format!("reading ConfigMap {namespace}/{name}")))?
                .map(|live| serde_json::to_value(&live))
                .transpose()
                .map_err(|_| ReconcileError::Patch("the preview ConfigMap comparison"))?;
            if !unchanged(&preview.config_map, live.as_ref()) {
                api.patch(
                    name,
                    &PatchParams::apply(&ctx.manager()).force(),
                    &apply_body::apply(&preview.config_map),
                )
                .await
                .map_err(api_error(format!("applying ConfigMap {namespace}/{name}")))?;
                ctx.events
                    .normal(
                        &md.object_ref(&()),
                        event_reasons::DRY_RUN_RENDERED,
                        event_actions::RENDER,
                        preview.summary.clone(),
                    )
                    .await;
            }
            status_write::write(md, ctx, &preview.status).await?;
        }
    }
    Ok(Action::requeue(ctx.resync))
}

/// Deletes the preview ConfigMap when the deployment's status says one was written
/// ([`shows_preview`]); a missing one is fine.
pub(super) async fn remove_preview<P: Provider>(
    md: &ModelDeployment,
    ctx: &Context<P>,
    namespace: &str,
) -> Result<(), ReconcileError> {
    if !shows_preview(md) {
        return Ok(());
    }
    let name = config_map_name(&md.name_any());
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), namespace);
    match api.delete(&name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(api_error(format!("deleting ConfigMap {namespace}/{name}"))(
            error,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::test_support::deployment;

    fn desired(kind: &str, name: &str) -> DesiredUpstream {
        DesiredUpstream {
            object: json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name}}),
            spec_hash: "s".into(),
            identity_hash: "i".into(),
        }
    }

    fn annotated(value: Option<&str>) -> ModelDeployment {
        let mut md = deployment("a/b");
        if let Some(value) = value {
            md.metadata.annotations = Some(
                [(annotations::DRY_RUN.to_string(), value.to_string())]
                    .into_iter()
                    .collect(),
            );
        }
        md
    }

    #[test]
    fn only_true_asks_for_a_dry_run() {
        assert!(requested(&annotated(Some("true"))));
        assert!(!requested(&annotated(Some("false"))));
        assert!(!requested(&annotated(Some("yes"))));
        assert!(!requested(&annotated(None)));
    }

    #[test]
    fn the_config_map_holds_the_render_owned_by_the_deployment() {
        let md = annotated(Some("true"));
        let objects = [desired("Deployment", "m"), desired("Service", "m")];
        let body = config_map(&md, "echo", "m-preview", &objects);
        assert_eq!(body["metadata"]["name"], "m-preview");
        assert_eq!(
            body["metadata"]["labels"][labels::MANAGED_BY],
            labels::MANAGED_BY_VALUE
        );
        assert_eq!(body["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(
            body["metadata"]["ownerReferences"][0]["kind"],
            "ModelDeployment"
        );
        assert_eq!(body["data"][dry_run::PROVIDER_KEY], "echo");
        let yaml = body["data"][dry_run::RENDER_KEY].as_str().unwrap();
        let documents: Vec<Value> = serde_saphyr::from_multiple(yaml).unwrap();
        assert_eq!(
            documents,
            objects.iter().map(|d| d.object.clone()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn an_unchanged_preview_is_not_written_again() {
        let md = annotated(Some("true"));
        let body = config_map(&md, "echo", "m-preview", &[desired("Service", "m")]);
        assert!(!unchanged(&body, None));
        let mut live = body.clone();
        live["metadata"]["resourceVersion"] = json!("7");
        live["metadata"]["labels"]["other"] = json!("x");
        assert!(unchanged(&body, Some(&live)));
        live["data"][dry_run::RENDER_KEY] = json!("edited");
        assert!(!unchanged(&body, Some(&live)));
        let mut extra = body.clone();
        extra["data"]["more"] = json!("x");
        assert!(!unchanged(&body, Some(&extra)), "an added key is removed");
    }

    #[test]
    fn a_preview_status_is_stalled_with_reason_dry_run() {
        use crate::conditions::Progress;
        let status = ProviderStatus::not_deployed(
            Phase::Pending,
            "m".into(),
            (true, reasons::COMPATIBILITY_VERIFIED, "ok".into()),
            (reasons::DRY_RUN, "m".into()),
        );
        assert_eq!(
            status.not_ready.as_ref().map(|n| n.reason),
            Some(NotReadyReason::DryRun)
        );
        assert!(
            status
                .conditions
                .iter()
                .any(|c| c.type_ == crate::constants::condition_types::READY
                    && c.reason == reasons::DRY_RUN)
        );
        assert!(matches!(status.progress(), Progress::Stalled { .. }));
    }

    /// A provider that renders nothing (only its names are read).
    struct Named;

    impl Provider for Named {
        fn name(&self) -> &str {
            "named"
        }
        fn display_name(&self) -> &str {
            "Named"
        }
        fn version(&self) -> &str {
            "0.0.1"
        }
        fn registration(&self) -> crate::v1alpha1::InferenceProviderConfigSpec {
            Default::default()
        }
        fn upstream(&self) -> super::super::traits::UpstreamKind {
            crate::provider::test_support::kind("apps", "Deployment", "deployments", "v1")
        }
        fn detect_schema(
            &self,
            _: Option<&k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>,
        ) -> super::super::traits::SchemaDetection {
            super::super::traits::SchemaDetection::CrdNotInstalled { crd: String::new() }
        }
        fn check_compatibility(
            &self,
            _: &ModelDeployment,
        ) -> Result<(), super::super::traits::Incompatible> {
            Ok(())
        }
        fn render(
            &self,
            _: &ModelDeployment,
            _: &super::super::traits::UpstreamSchema,
        ) -> Result<super::super::rendered::Rendered, super::super::rendered::RenderError> {
            Err(super::super::rendered::RenderError::Unsupported(
                String::new(),
            ))
        }
        fn translate_status(
            &self,
            _: &ModelDeployment,
            _: &[Option<&kube::core::DynamicObject>],
        ) -> super::super::traits::TranslatedStatus {
            crate::provider::test_support::translated(&[], "ready", json!(true))
        }
    }

    #[test]
    fn a_render_is_a_preview_and_a_hold_stays_a_hold() {
        let md = annotated(Some("true"));
        let checked = Checked {
            desired: vec![desired("Deployment", "m"), desired("Service", "m")],
            warnings: vec![],
        };
        let DryRun::Preview(preview) = decide(&Named, &md, None, Ok(checked.clone())) else {
            panic!("a render is previewed")
        };
        assert_eq!(preview.name, "m-preview");
        assert_eq!(
            preview.summary,
            "Dry run: rendered 2 objects into ConfigMap m-preview: Deployment m, Service m"
        );
        assert_eq!(
            preview.status.message,
            "Dry run: rendered 2 objects into ConfigMap m-preview; remove the airunway.ai/dry-run annotation to deploy"
        );
        assert_eq!(preview.status.phase, Phase::Pending);

        let held = crate::provider::statuses::crd_gone(&Named, "gone");
        let hold = Hold {
            cause: HoldCause::CrdUnavailable,
            status: held.clone(),
        };
        assert_eq!(
            decide(&Named, &md, None, Err(Box::new(hold.clone()))),
            DryRun::Hold(hold)
        );
        let prepared = PreparationHold {
            reason: reasons::IMAGE_RESOLUTION_FAILED,
            message: "no image".into(),
        };
        let DryRun::Hold(hold) = decide(&Named, &md, Some(&prepared), Ok(checked)) else {
            panic!("the preparation hold comes first")
        };
        assert_eq!(hold.cause, HoldCause::Prepare);
    }
}
