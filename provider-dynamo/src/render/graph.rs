//! The version-free graph a ModelDeployment becomes: the components (name, type, replicas,
//! containers, resources, pod metadata and placement, volumes) the `v1alpha1` and `v1beta1`
//! writers serialise. Component names are the same in both versions: Dynamo keys its status
//! by them.

use airunway_api::serde_json::{Map, Value};

/// A graph: its name and labels, its engine, its components and the claims they mount.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    /// The graph's (and the deployment's) name.
    pub name: String,
    /// The labels of the DynamoGraphDeployment.
    pub labels: Map<String, Value>,
    /// `backendFramework`: `vllm`, `sglang` or `trtllm`.
    pub backend: String,
    /// The components, frontend first.
    pub components: Vec<Component>,
    /// Every claim a component mounts, once, in the order first mounted (made by the core or
    /// the user, never by Dynamo).
    pub claims: Vec<String>,
}

/// A component's role in the graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComponentType {
    /// The OpenAI-compatible HTTP frontend and router.
    Frontend,
    /// The endpoint picker of the inference gateway.
    Epp,
    /// An aggregated engine worker.
    Worker,
    /// The prefill workers of a disaggregated graph.
    Prefill,
    /// The decode workers of a disaggregated graph.
    Decode,
}

impl ComponentType {
    /// Whether this component runs the engine.
    pub fn is_worker(self) -> bool {
        matches!(
            self,
            ComponentType::Worker | ComponentType::Prefill | ComponentType::Decode
        )
    }
}

/// A resource list in Dynamo's terms: GPUs (of an optional device type), CPU, memory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    /// The GPU count, as a quantity string.
    pub gpu: Option<String>,
    /// The GPU resource name when it is not `nvidia.com/gpu`.
    pub gpu_type: Option<String>,
    /// CPU.
    pub cpu: Option<String>,
    /// Memory.
    pub memory: Option<String>,
}

impl Resources {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.gpu.is_none() && self.gpu_type.is_none() && self.cpu.is_none() && self.memory.is_none()
    }
}

/// A volume a component mounts: a claim at a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    /// The PersistentVolumeClaim (also the volume's name).
    pub claim: String,
    /// Where it is mounted.
    pub path: String,
    /// Whether it is the engine's compilation cache.
    pub compilation_cache: bool,
}

/// The frontend sidecar serving a worker's pool port (gateway graphs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sidecar {
    /// Its image.
    pub image: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The Secret its environment comes from.
    pub env_from_secret: Option<String>,
}

/// One component of the graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Component {
    /// The component's name (a `services` key in `v1alpha1`, `name` in `v1beta1`).
    pub name: String,
    /// Its role.
    pub kind: ComponentType,
    /// Its replicas.
    pub replicas: i64,
    /// The Secret the environment comes from (the Hugging Face token).
    pub env_from_secret: Option<String>,
    /// Environment variables (EnvVar objects) of the component.
    pub env: Vec<Value>,
    /// Environment variables (EnvVar objects) set on the main container itself.
    pub container_env: Vec<Value>,
    /// Resource limits.
    pub limits: Resources,
    /// Resource requests.
    pub requests: Resources,
    /// The main container's image.
    pub image: String,
    /// The main container's command (empty: the image's).
    pub command: Vec<String>,
    /// The main container's arguments (empty: none).
    pub args: Vec<String>,
    /// The pods' node selector.
    pub node_selector: Option<Value>,
    /// The pods' tolerations.
    pub tolerations: Option<Value>,
    /// The pods' extra labels.
    pub pod_labels: Option<Value>,
    /// The pods' extra annotations.
    pub pod_annotations: Option<Value>,
    /// The volumes mounted in the main container.
    pub mounts: Vec<Mount>,
    /// The frontend sidecar, on a gateway graph's workers.
    pub sidecar: Option<Sidecar>,
    /// The legacy (Go) endpoint picker's configuration, an EndpointPickerConfig.
    pub epp_config: Option<Value>,
}

impl Component {
    /// A component with nothing but its name, role, replicas and image.
    pub fn new(name: impl Into<String>, kind: ComponentType, replicas: i64, image: String) -> Self {
        Component {
            name: name.into(),
            kind,
            replicas,
            env_from_secret: None,
            env: Vec::new(),
            container_env: Vec::new(),
            limits: Resources::default(),
            requests: Resources::default(),
            image,
            command: Vec::new(),
            args: Vec::new(),
            node_selector: None,
            tolerations: None,
            pod_labels: None,
            pod_annotations: None,
            mounts: Vec::new(),
            sidecar: None,
            epp_config: None,
        }
    }
}
