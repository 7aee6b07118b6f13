//! Property-test generators (feature `generate`, for `[dev-dependencies]`): ModelDeployment
//! specs as JSON — mostly well-shaped, with values at and past every edge (names of 63+
//! characters, unicode and control characters, quantities negative, zero and `1e100`, huge
//! context lengths, megabyte-sized values are left to the hand-written corpus) — override trees
//! with privilege-escalating keys at any depth and in any spelling, selection rules (valid,
//! erroring, expensive, huge) and upstream statuses.

use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::v1alpha1::ModelDeployment;

/// Strings as users write them, and strings past every edge.
pub fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z][a-z0-9-]{0,12}",
        1 => Just(String::new()),
        1 => Just("a".repeat(63)),
        1 => Just("a".repeat(64)),
        1 => Just("b".repeat(300)),
        1 => "\\PC{0,16}",
        1 => Just("tab\there\u{0}nul\u{7f}".to_string()),
        1 => Just("模型-ü-🚀".to_string()),
        1 => Just("-leading-dash".to_string()),
        1 => Just("UPPER_case.dots/slash".to_string()),
    ]
}

/// Resource quantities, valid and not.
pub fn quantity() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop_oneof![Just("1"), Just("500m"), Just("4"), Just("16Gi"), Just("128Gi"), Just("0.5")].prop_map(str::to_string),
        1 => prop_oneof![Just("-1"), Just("0"), Just("1e100"), Just("9999999Ti"), Just("1.5.5"), Just(""), Just("Gi"), Just("1 Gi")].prop_map(str::to_string),
        1 => "[0-9]{1,20}(m|Ki|Mi|Gi|Ti|k|M|G|E|e[0-9]{1,3})?",
    ]
}

/// Integers around every edge an integer field has.
pub fn integer() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => 0i64..10,
        1 => prop_oneof![Just(-1i64), Just(i64::from(i32::MAX)), Just(i64::from(i32::MAX) + 1), Just(16_777_216), Just(16_777_217), Just(1i64 << 62), Just(i64::MIN)],
        1 => any::<i64>(),
    ]
}

fn string_map() -> impl Strategy<Value = Value> {
    btree_map(text(), text(), 0..4).prop_map(|m| json!(m))
}

/// A spelling of `key` Go's JSON decoding would take for the same field.
fn respelled(key: &'static str) -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just(key.to_string()),
        1 => Just(key.to_uppercase()),
        1 => Just(key.to_lowercase()),
        1 => Just({
            let mut c = key.chars();
            c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
        }),
    ]
}

/// Keys that would escalate a pod's privileges, with the value that does.
pub fn escalating_setting() -> impl Strategy<Value = (String, Value)> {
    let settings: Vec<(&'static str, Value)> = vec![
        ("hostNetwork", json!(true)),
        ("hostPID", json!(true)),
        ("hostIPC", json!(true)),
        ("privileged", json!(true)),
        ("securityContext", json!({"privileged": true})),
        (
            "securityContext",
            json!({"capabilities": {"add": ["SYS_ADMIN", "NET_ADMIN"]}}),
        ),
        ("capabilities", json!({"add": ["SYS_ADMIN"]})),
        ("volumes", json!([{"name": "h", "hostPath": {"path": "/"}}])),
        ("hostPath", json!({"path": "/var/run/docker.sock"})),
        ("serviceAccountName", json!("cluster-admin")),
        ("serviceAccount", json!("cluster-admin")),
        ("automountServiceAccountToken", json!(true)),
        ("nodeName", json!("control-plane")),
        (
            "ephemeralContainers",
            json!([{"name": "x", "image": "busybox", "securityContext": {"privileged": true}}]),
        ),
        (
            "initContainers",
            json!([{"name": "x", "image": "busybox", "ports": [{"containerPort": 1, "hostPort": 1}]}]),
        ),
    ];
    proptest::sample::select(settings).prop_flat_map(|(key, value)| (respelled(key), Just(value)))
}

/// A path of object keys leading to where a setting is put: the paths the providers merge
/// (`spec.template.spec`, `head`, `frontend.resources`, ...) and random ones, in any spelling.
fn path() -> impl Strategy<Value = Vec<String>> {
    let known: Vec<Vec<&'static str>> = vec![
        vec![],
        vec!["spec", "template", "spec"],
        vec!["spec", "template"],
        vec!["spec"],
        vec!["head"],
        vec!["worker"],
        vec!["head", "template", "spec"],
        vec!["frontend"],
        vec!["frontend", "resources"],
        vec!["inference", "template", "spec"],
    ];
    prop_oneof![
        3 => proptest::sample::select(known).prop_map(|p| p.into_iter().map(str::to_string).collect()),
        1 => vec("[a-zA-Z]{1,8}", 0..6),
    ]
}

/// Any JSON value, nested up to `depth` levels.
pub fn json_value(depth: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        integer().prop_map(|i| json!(i)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(depth, 32, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            btree_map("[a-zA-Z]{1,10}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// `provider.overrides`: random trees, nulls that delete, and escalating settings placed at
/// any path in any spelling.
pub fn overrides() -> impl Strategy<Value = Map<String, Value>> {
    (
        btree_map("[a-zA-Z.]{1,10}", json_value(3), 0..3),
        vec((path(), escalating_setting()), 0..3),
    )
        .prop_map(|(random, placed)| {
            let mut out: Map<String, Value> = random.into_iter().collect();
            for (path, (key, value)) in placed {
                put(&mut out, &path, key, value);
            }
            out
        })
}

/// Puts `key: value` at `path` in `map`, making objects along the way (paths are short).
fn put(map: &mut Map<String, Value>, path: &[String], key: String, value: Value) {
    match path.split_first() {
        None => {
            map.insert(key, value);
        }
        Some((first, rest)) => {
            let slot = map.entry(first.clone()).or_insert_with(|| json!({}));
            if !slot.is_object() {
                *slot = json!({});
            }
            if let Value::Object(next) = slot {
                put(next, rest, key, value);
            }
        }
    }
}

fn engine_type() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("vllm")),
        Just(json!("sglang")),
        Just(json!("trtllm")),
        Just(json!("llamacpp")),
    ]
}

fn gpu() -> impl Strategy<Value = Value> {
    (
        option::of(prop_oneof![4 => 0i64..9, 1 => integer()]),
        option::of(text()),
    )
        .prop_map(|(count, gpu_type)| {
            let mut gpu = json!({});
            if let Some(c) = count {
                gpu["count"] = json!(c);
            }
            if let Some(t) = gpu_type {
                gpu["type"] = json!(t);
            }
            gpu
        })
}

fn component() -> impl Strategy<Value = Value> {
    (
        option::of(integer()),
        option::of(gpu()),
        option::of(quantity()),
    )
        .prop_map(|(replicas, gpu, memory)| {
            let mut c = json!({});
            if let Some(r) = replicas {
                c["replicas"] = json!(r);
            }
            if let Some(g) = gpu {
                c["gpu"] = g;
            }
            if let Some(m) = memory {
                c["memory"] = json!(m);
            }
            c
        })
}

/// A shipped provider's name.
fn provider_name() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("kaito"),
        Just("dynamo"),
        Just("kuberay"),
        Just("llmd"),
        Just("vllm")
    ]
}

fn image() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just("vllm/vllm-openai:v0.11.0".to_string()),
        1 => Just("registry.example.com:5000/team/llama@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef".to_string()),
        1 => text(),
    ]
}

fn insert_some(spec: &mut Value, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        spec[key] = v;
    }
}

/// A ModelDeployment `spec` as JSON: half [`hostile_spec`] (values at and past every edge,
/// mostly refused by the schema or validation), half [`well_shaped_spec`] (mostly valid, so
/// the renders and what they apply are exercised too).
pub fn spec() -> BoxedStrategy<Value> {
    prop_oneof![hostile_spec(), well_shaped_spec()].boxed()
}

/// `spec.engine`'s tool calling and parser fields: mostly valid parser names (vLLM's and
/// Dynamo's), sometimes a refused one (`auto`, upper case, shell metacharacters, 64
/// characters), each field often absent.
fn engine_parsers() -> impl Strategy<Value = Vec<(&'static str, Value)>> {
    let name = prop_oneof![
        4 => prop_oneof![
            Just("hermes"),
            Just("llama3_json"),
            Just("qwen3"),
            Just("deepseek_r1"),
            Just("harmony"),
            Just("openai_gptoss")
        ]
        .prop_map(str::to_string),
        1 => prop_oneof![
            Just("auto".to_string()),
            Just("Hermes".to_string()),
            Just("a;$(id)".to_string()),
            Just("p".repeat(64))
        ],
    ];
    (
        option::of(any::<bool>()),
        option::of(name.clone()),
        option::of(name),
    )
        .prop_map(|(calling, tool, reasoning)| {
            let mut fields = Vec::new();
            fields.extend(calling.map(|c| ("toolCalling", Value::Bool(c))));
            fields.extend(tool.map(|t| ("toolCallParser", json!(t))));
            fields.extend(reasoning.map(|r| ("reasoningParser", json!(r))));
            fields
        })
}

/// `spec.adapters`: LoRA adapters with every source form (and refused ones), revisions,
/// ranks at and past vLLM's edges, names valid, duplicated and hostile.
pub fn adapters() -> impl Strategy<Value = Value> {
    let name = prop_oneof![
        4 => "[a-z][a-z0-9-]{0,10}[a-z0-9]".boxed(),
        1 => text().boxed(),
        1 => Just("sql".to_string()).boxed(),
    ];
    let source = prop_oneof![
        3 => "[a-z]{1,8}/[a-z0-9-]{1,12}".boxed(),
        2 => "hf://[a-z]{1,8}/[a-z0-9._-]{1,12}".boxed(),
        2 => "pvc://[a-z][a-z0-9-]{0,8}(/[a-z0-9._-]{1,8}){0,2}".boxed(),
        1 => Just("s3://bucket/loras/sql".to_string()).boxed(),
        1 => Just("gs://bucket/loras/sql".to_string()).boxed(),
        1 => Just("https://example.com/loras/sql".to_string()).boxed(),
        1 => text().boxed(),
    ];
    let adapter = (
        name,
        source,
        option::of(prop_oneof![Just("main"), Just("v1.0"), Just("")]),
        option::of(prop_oneof![
            Just(1i64),
            Just(4),
            Just(8),
            Just(16),
            Just(300),
            Just(512),
            Just(513),
            Just(0)
        ]),
    )
        .prop_map(|(name, source, revision, rank)| {
            let mut a = json!({"name": name, "source": source});
            insert_some(&mut a, "revision", revision.map(|r| json!(r)));
            insert_some(&mut a, "maxRank", rank.map(|r| json!(r)));
            a
        });
    vec(adapter, 0..4).prop_map(Value::Array)
}

/// A spec a careful user could write: valid names, quantities, env, labels and tolerations,
/// engines, modes and GPU settings that fit together (mostly), edge counts inside the limits
/// (`contextLength` 2^24, GPU count 8, 63-character label values), sometimes with generated
/// (often escalating) `provider.overrides`.
pub fn well_shaped_spec() -> BoxedStrategy<Value> {
    let label = "[a-z][a-z0-9-]{0,8}[a-z0-9]";
    let model = prop_oneof![
        Just("Qwen/Qwen3-8B"),
        Just("org/model-gguf"),
        Just("meta-llama/Llama-3.1-8B-Instruct"),
        Just("a"),
    ]
    .prop_map(|id| json!({"id": id}));
    let engine = (
        option::of(engine_type()),
        option::of(prop_oneof![
            Just(4096i64),
            Just(32768),
            Just(16_777_216),
            1i64..100_000
        ]),
        option::of(btree_map(
            "[a-z][a-z-]{0,10}[a-z]",
            "[a-zA-Z0-9._-]{1,12}",
            0..3,
        )),
        option::of(prop_oneof![
            Just("vllm/vllm-openai:v0.11.0"),
            Just("registry.example.com:5000/team/llama:1.0")
        ]),
        option::of(any::<bool>()),
        option::of(vec(
            prop_oneof![
                Just("--max-num-seqs=8"),
                Just("--disable-log-requests"),
                Just("-q"),
                Just("--tool-call-parser=hermes")
            ],
            0..3,
        )),
        engine_parsers(),
    )
        .prop_map(|(t, ctx, args, image, eager, extra, parsers)| {
            let mut e = json!({});
            for (key, value) in parsers {
                e[key] = value;
            }
            insert_some(&mut e, "type", t);
            insert_some(&mut e, "contextLength", ctx.map(|c| json!(c)));
            insert_some(&mut e, "args", args.map(|a| json!(a)));
            insert_some(&mut e, "image", image.map(|i| json!(i)));
            insert_some(&mut e, "enforceEager", eager.map(Value::Bool));
            insert_some(&mut e, "extraArgs", extra.map(|x| json!(x)));
            e
        });
    let gpu = (
        prop_oneof![4 => 1i64..3, 1 => Just(0i64), 1 => Just(8i64)],
        option::of(prop_oneof![Just("nvidia.com/gpu"), Just("amd.com/gpu")]),
    )
        .prop_map(|(count, t)| {
            let mut g = json!({"count": count});
            insert_some(&mut g, "type", t.map(|t| json!(t)));
            g
        });
    let quantity = prop_oneof![
        Just("1"),
        Just("500m"),
        Just("16Gi"),
        Just("128Gi"),
        Just("0.5")
    ];
    let mode = prop_oneof![3 => Just("aggregated"), 1 => Just("disaggregated")];
    let env = vec(("[A-Z][A-Z0-9_]{0,10}", "[ -~]{0,24}"), 0..3).prop_map(|e| {
        json!(
            e.into_iter()
                .map(|(n, v)| json!({"name": n, "value": v}))
                .collect::<Vec<_>>()
        )
    });
    let labels = btree_map(
        label,
        prop_oneof![Just("a".repeat(63)), "[a-z0-9]{0,8}".boxed()],
        0..3,
    );
    let toleration = (label, prop_oneof![Just("NoSchedule"), Just("NoExecute")])
        .prop_map(|(key, effect)| json!({"key": key, "operator": "Exists", "effect": effect}));
    let provider = (
        option::of(provider_name()),
        prop_oneof![2 => Just(None), 1 => overrides().prop_map(Some)],
    );
    (
        (
            model,
            option::of(engine),
            mode,
            gpu.clone(),
            (0i64..4, gpu.clone(), gpu),
        ),
        (
            option::of(quantity.clone()),
            option::of(quantity),
            option::of(env),
        ),
        (
            option::of(labels.clone()),
            option::of(vec(toleration, 0..2)),
            option::of((labels.clone(), labels)),
        ),
        (provider, option::of(label), 0i64..5),
        option::of(adapters()),
    )
        .prop_map(
            |(
                (model, engine, mode, gpu, (replicas, prefill_gpu, decode_gpu)),
                (memory, cpu, env),
                (selector, tolerations, template),
                ((name, overrides), token, shape),
                adapters,
            )| {
                let mut spec = json!({"model": model, "serving": {"mode": mode}});
                insert_some(&mut spec, "engine", engine);
                insert_some(&mut spec, "adapters", adapters);
                let mut resources = json!({});
                insert_some(&mut resources, "memory", memory.map(|m| json!(m)));
                insert_some(&mut resources, "cpu", cpu.map(|c| json!(c)));
                if mode == "disaggregated" {
                    spec["scaling"] = json!({"prefill": {"replicas": 1, "gpu": prefill_gpu},
                        "decode": {"replicas": replicas.max(1), "gpu": decode_gpu}});
                } else {
                    resources["gpu"] = gpu;
                    // Sometimes no replica count, sometimes 0 (scaled down).
                    if shape > 0 {
                        spec["scaling"] = json!({"replicas": replicas});
                    }
                }
                spec["resources"] = resources;
                insert_some(&mut spec, "env", env);
                insert_some(&mut spec, "nodeSelector", selector.map(|s| json!(s)));
                insert_some(&mut spec, "tolerations", tolerations.map(|t| json!(t)));
                insert_some(
                    &mut spec,
                    "podTemplate",
                    template.map(|(l, a)| json!({"metadata": {"labels": l, "annotations": a}})),
                );
                insert_some(
                    &mut spec,
                    "secrets",
                    token.map(|t| json!({"huggingFaceToken": t})),
                );
                let mut provider = json!({});
                insert_some(&mut provider, "name", name.map(|n| json!(n)));
                insert_some(&mut provider, "overrides", overrides.map(Value::Object));
                if provider.as_object().is_some_and(|p| !p.is_empty()) {
                    spec["provider"] = provider;
                }
                spec
            },
        )
        .boxed()
}

/// A ModelDeployment `spec` as JSON with values at and past every edge.
pub fn hostile_spec() -> BoxedStrategy<Value> {
    let model = (
        prop_oneof![3 => Just("Qwen/Qwen3-8B".to_string()), 1 => Just("org/model-gguf".to_string()), 1 => text()],
        option::of(prop_oneof![Just("huggingface"), Just("custom")]),
    )
        .prop_map(|(id, source)| {
            let mut m = json!({"id": id});
            if let Some(s) = source {
                m["source"] = json!(s);
            }
            m
        })
        .boxed();
    let engine = (
        option::of(engine_type()),
        option::of(integer()),
        option::of(btree_map("[a-z][a-z-]{0,10}", text(), 0..3)),
        option::of(image()),
        option::of(any::<bool>()),
        option::of(any::<bool>()),
        option::of(vec(text(), 0..3)),
    )
        .prop_map(|(t, ctx, args, image, prefix, eager, extra)| {
            let mut e = json!({});
            insert_some(&mut e, "type", t);
            insert_some(&mut e, "contextLength", ctx.map(|c| json!(c)));
            insert_some(&mut e, "args", args.map(|a| json!(a)));
            insert_some(&mut e, "image", image.map(Value::String));
            insert_some(&mut e, "enablePrefixCaching", prefix.map(Value::Bool));
            insert_some(&mut e, "enforceEager", eager.map(Value::Bool));
            insert_some(&mut e, "extraArgs", extra.map(|x| json!(x)));
            e
        })
        .boxed();
    let scaling = (
        option::of(integer()),
        option::of(component()),
        option::of(component()),
    )
        .prop_map(|(replicas, prefill, decode)| {
            let mut s = json!({});
            insert_some(&mut s, "replicas", replicas.map(|r| json!(r)));
            insert_some(&mut s, "prefill", prefill);
            insert_some(&mut s, "decode", decode);
            s
        })
        .boxed();
    let resources = (
        option::of(gpu()),
        option::of(quantity()),
        option::of(quantity()),
    )
        .prop_map(|(gpu, memory, cpu)| {
            let mut r = json!({});
            insert_some(&mut r, "gpu", gpu);
            insert_some(&mut r, "memory", memory.map(Value::String));
            insert_some(&mut r, "cpu", cpu.map(Value::String));
            r
        })
        .boxed();
    let env = vec((text(), text()), 0..3)
        .prop_map(|e| {
            json!(
                e.into_iter()
                    .map(|(n, v)| json!({"name": n, "value": v}))
                    .collect::<Vec<_>>()
            )
        })
        .boxed();
    let tolerations = vec(
        (
            text(),
            option::of(prop_oneof![
                Just("Equal"),
                Just("Exists"),
                Just("Sometimes")
            ]),
            option::of(prop_oneof![
                Just("NoSchedule"),
                Just("NoExecute"),
                Just("Never")
            ]),
            option::of(integer()),
        ),
        0..2,
    )
    .prop_map(|ts| {
        json!(
            ts.into_iter()
                .map(|(key, op, effect, secs)| {
                    let mut t = json!({"key": key});
                    insert_some(&mut t, "operator", op.map(|o| json!(o)));
                    insert_some(&mut t, "effect", effect.map(|e| json!(e)));
                    insert_some(&mut t, "tolerationSeconds", secs.map(|s| json!(s)));
                    t
                })
                .collect::<Vec<_>>()
        )
    })
    .boxed();
    let provider = (option::of(provider_name()), option::of(overrides()))
        .prop_map(|(name, overrides)| {
            let mut p = json!({});
            insert_some(&mut p, "name", name.map(|n| json!(n)));
            insert_some(&mut p, "overrides", overrides.map(Value::Object));
            p
        })
        .boxed();
    (
        (model, option::of(engine), option::of(prop_oneof![Just("aggregated"), Just("disaggregated")])),
        (option::of(scaling), option::of(resources), option::of(image())),
        (option::of(env), option::of(string_map()), option::of(tolerations)),
        (option::of(provider), option::of((string_map(), string_map())), option::of(text())),
        option::of(adapters()),
    )
        .prop_map(|((model, engine, mode), (scaling, resources, image), (env, selector, tolerations), (provider, template, token), adapters)| {
            let mut spec = json!({"model": model});
            insert_some(&mut spec, "adapters", adapters);
            insert_some(&mut spec, "engine", engine);
            insert_some(&mut spec, "serving", mode.map(|m| json!({"mode": m})));
            insert_some(&mut spec, "scaling", scaling);
            insert_some(&mut spec, "resources", resources);
            insert_some(&mut spec, "image", image.map(Value::String));
            insert_some(&mut spec, "env", env);
            insert_some(&mut spec, "nodeSelector", selector);
            insert_some(&mut spec, "tolerations", tolerations);
            insert_some(&mut spec, "provider", provider);
            insert_some(&mut spec, "podTemplate", template.map(|(labels, annotations)| json!({"metadata": {"labels": labels, "annotations": annotations}})));
            insert_some(&mut spec, "secrets", token.map(|t| json!({"huggingFaceToken": t})));
            spec
        })
        .boxed()
}

/// A ModelDeployment named `name` with `spec`, assigned to `provider` (`None`: unassigned);
/// `None` when the spec does not decode (the API server's schema refuses such an object).
pub fn model_deployment(
    name: &str,
    spec: &Value,
    provider: Option<&str>,
) -> Option<ModelDeployment> {
    let mut object = json!({"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": name, "namespace": "ns", "uid": "u", "generation": 1}, "spec": spec});
    if let Some(p) = provider {
        object["status"] = json!({"provider": {"name": p}});
    }
    serde_json::from_value(object).ok()
}

/// Selection rules: ones the shipped providers use, ones that error at run time (missing
/// keys, wrong types, division by zero), ones that are expensive (nested comprehensions over
/// the spec) or huge, and random text.
pub fn cel_rule() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop_oneof![
            Just("spec.engine.type == 'vllm'"),
            Just("has(spec.resources) && has(spec.resources.gpu) && spec.resources.gpu.count > 0"),
            Just("!has(spec.resources.gpu) || spec.resources.gpu.count == 0"),
            Just("spec.serving.mode == 'disaggregated'"),
            Just("spec.model.id.startsWith('Qwen/')"),
            Just("metadata.name.size() < 10"),
        ].prop_map(str::to_string),
        2 => prop_oneof![
            Just("spec.nosuchfield.deeper == 1"),
            Just("spec.engine.type + 1 == 2"),
            Just("1 / 0 == 1"),
            Just("spec.model.id.matches('(')"),
            Just("int(spec.model.id) > 0"),
            Just("spec.env[100].name == 'x'"),
            Just("{'a': 1}.b == 1"),
        ].prop_map(str::to_string),
        2 => prop_oneof![
            Just("spec.env.all(a, spec.env.all(b, spec.env.all(c, spec.env.all(d, a.name != d.name))))"),
            Just("spec.model.id.split('/').all(x, spec.model.id.split('/').exists(y, x == y))"),
            Just("[1,2,3,4,5,6,7,8].all(a, [1,2,3,4,5,6,7,8].all(b, [1,2,3,4,5,6,7,8].all(c, [1,2,3,4,5,6,7,8].all(d, a+b+c+d > 0))))"),
            Just("spec.tolerations.map(t, t.key).filter(k, k.size() > 0).size() >= 0"),
        ].prop_map(str::to_string),
        1 => (1usize..2000).prop_map(|n| vec!["spec.engine.type == 'vllm'"; n].join(" || ")),
        1 => (1usize..300).prop_map(|n| format!("{}true{}", "(".repeat(n), ")".repeat(n))),
        1 => "\\PC{0,64}",
    ]
}

/// An upstream object's `status`: conditions of any type, status and reason, phases, counts
/// of any sign and type, missing and wrong-typed fields.
pub fn upstream_status() -> impl Strategy<Value = Value> {
    let condition = (
        prop_oneof![
            Just("Ready"),
            Just("Available"),
            Just("Progressing"),
            Just("ReplicaFailure"),
            Just("ResourceReady"),
            Just("InferenceReady"),
            Just("WorkspaceSucceeded"),
            Just("Failed")
        ]
        .prop_map(str::to_string),
        prop_oneof![
            Just(json!("True")),
            Just(json!("False")),
            Just(json!("Unknown")),
            Just(json!(true)),
            Just(Value::Null)
        ],
        option::of(text()),
        option::of(text()),
    )
        .prop_map(|(t, s, reason, message)| {
            let mut c = json!({"type": t, "status": s});
            insert_some(&mut c, "reason", reason.map(Value::String));
            insert_some(&mut c, "message", message.map(Value::String));
            c
        });
    let counts = btree_map(
        prop_oneof![
            Just("replicas"),
            Just("readyReplicas"),
            Just("availableReplicas"),
            Just("updatedReplicas"),
            Just("observedGeneration"),
            Just("unavailableReplicas")
        ]
        .prop_map(str::to_string),
        prop_oneof![
            integer().prop_map(|i| json!(i)),
            Just(json!("3")),
            Just(Value::Null)
        ],
        0..4,
    );
    (
        vec(condition, 0..5),
        counts,
        option::of(
            prop_oneof![
                Just("Running"),
                Just("Pending"),
                Just("Failed"),
                Just("Ready"),
                Just("successful"),
                Just("failed"),
                Just("")
            ]
            .prop_map(str::to_string),
        ),
        option::of(json_value(3)),
    )
        .prop_map(|(conditions, counts, state, extra)| {
            let mut status = json!({"conditions": conditions});
            for (k, v) in counts {
                status[k] = v;
            }
            if let Some(s) = state {
                status["state"] = json!(s.clone());
                status["phase"] = json!(s);
            }
            if let Some(e) = extra {
                status["serviceStatus"] = e;
            }
            status
        })
}
