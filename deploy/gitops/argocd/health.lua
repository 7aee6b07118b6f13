-- Argo CD health check for airunway.ai/ModelDeployment (Lua 5.1 as Argo CD runs it; also
-- valid Lua 5.3/5.4). It reads the conditions the Kubernetes API conventions define, as
-- kstatus does (docs/status-ownership.md):
--   reconcile paused                              -> Suspended
--   status.observedGeneration behind generation   -> Progressing (nobody acted on the spec yet)
--   Stalled=True                                  -> Degraded (a change is needed)
--   Reconciling=True                              -> Progressing
--   Degraded=True (serving, not fully)            -> Degraded
--   Ready=True                                    -> Healthy
--   (a deployment scaled to zero is Ready=True, reason ScaledToZero -> Healthy)
--   phase Failed                                  -> Degraded
--   anything else                                 -> Progressing
-- Install: the key resource.customizations.health.airunway.ai_ModelDeployment of argocd-cm
-- (deploy/gitops/argocd/argocd-cm.yaml carries this file verbatim).
local hs = {}
local metadata = obj.metadata or {}
local annotations = metadata.annotations or {}
if annotations["airunway.ai/reconcile-paused"] == "true" then
  hs.status = "Suspended"
  hs.message = "Reconciliation is paused (annotation airunway.ai/reconcile-paused)"
  return hs
end
local status = obj.status
if status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for AI Runway to reconcile the deployment"
  return hs
end
if metadata.generation ~= nil and status.observedGeneration ~= metadata.generation then
  hs.status = "Progressing"
  hs.message = "Waiting for generation " .. tostring(metadata.generation) .. " to be acted on"
  return hs
end
local found = {}
if status.conditions ~= nil then
  for _, condition in ipairs(status.conditions) do
    found[condition.type] = condition
  end
end
local function describe(condition)
  local text = condition.reason or ""
  if condition.message ~= nil and condition.message ~= "" then
    text = text .. ": " .. condition.message
  end
  return text
end
local stalled = found["Stalled"]
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = describe(stalled)
  return hs
end
local reconciling = found["Reconciling"]
if reconciling ~= nil and reconciling.status == "True" then
  hs.status = "Progressing"
  hs.message = describe(reconciling)
  return hs
end
local degraded = found["Degraded"]
if degraded ~= nil and degraded.status == "True" then
  hs.status = "Degraded"
  hs.message = describe(degraded)
  return hs
end
local ready = found["Ready"]
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = status.message or ""
  if hs.message == "" then
    hs.message = describe(ready)
  end
  return hs
end
if status.phase == "Failed" then
  hs.status = "Degraded"
  hs.message = status.message or "The deployment failed"
  return hs
end
hs.status = "Progressing"
hs.message = status.message or ("Phase " .. tostring(status.phase))
return hs
