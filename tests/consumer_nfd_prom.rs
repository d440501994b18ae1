//! `export --format nfd` and `--format prom`, read by their consumers.
//!
//! NFD: the file is parsed the way nfd-worker's local source parses `features.d` files
//! (kubernetes-sigs/node-feature-discovery at `76e6cc8c`, `source/local/local.go`:
//! `parseFeatureFile` and `parseDirectives`), and every label is validated the way nfd-master
//! validates it (`pkg/apis/nfd/validate/validate.go`, `Label`, lines 95-121) with the
//! Kubernetes rules it calls (kubernetes/apimachinery `pkg/api/validate/content/kube.go`
//! `IsLabelKey`/`IsLabelValue`, `pkg/util/validation/validation.go` `IsDNS1123Subdomain`).
//! Written from reading those files; no code copied.
//!
//! Prometheus: `promtool check metrics` (Debian's `prometheus` package) on the binary's output.
//!
//! Both carry the audit's GPUDirect RDMA verdict: true on a clean HGX, false on a PHB-only VM
//! and on a node whose GPU3 NIC sits on the other socket.

mod common;

use peerpath::render::nfd;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `labelKeyFmt` (kube.go:24-26): the name part, also the shape of a non-empty value.
const LABEL_KEY: &str = r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$";
/// `dns1123SubdomainFmt` (validation.go:155, 184).
const DNS_SUBDOMAIN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// `validate.Label(key, value)`.
fn nfd_validate_label(key: &str, value: &str) -> Result<(), String> {
    let key_re = regex::Regex::new(LABEL_KEY).unwrap();
    let dns_re = regex::Regex::new(DNS_SUBDOMAIN).unwrap();
    // IsQualifiedName → IsLabelKey (kube.go:43-72): at most one '/', a DNS-subdomain prefix of
    // at most 253 characters (validation.go:198-206), a name of 1-63 characters.
    let parts: Vec<&str> = key.split('/').collect();
    let (ns, name) = match parts.as_slice() {
        [n] => ("", *n),
        [p, n] => {
            if p.is_empty() {
                return Err("prefix part must be non-empty".into());
            }
            if p.len() > 253 || !dns_re.is_match(p) {
                return Err(format!("prefix part {p:?} is not a DNS subdomain"));
            }
            (*p, *n)
        }
        _ => return Err("more than one '/'".into()),
    };
    if name.is_empty() || name.len() > 63 || !key_re.is_match(name) {
        return Err(format!("name part {name:?} invalid"));
    }
    // validate.go:101-105: unprefixed keys are not allowed.
    if ns.is_empty() {
        return Err("unprefixed keys are not allowed".into());
    }
    // validate.go:106-113: kubernetes.io and its subdomains are denied, except NFD's feature
    // and profile namespaces (FeatureLabelNs, ProfileLabelNs, annotations_labels.go:21-30) and
    // their subdomains.
    if ns == "kubernetes.io" || ns.ends_with(".kubernetes.io") {
        let allowed = ["feature.node.kubernetes.io", "profile.node.kubernetes.io"];
        if !allowed
            .iter()
            .any(|a| ns == *a || ns.ends_with(&format!(".{a}")))
        {
            return Err("namespace is not allowed".into());
        }
    }
    // validate.go:115-118 → IsLabelValue (kube.go:74-93): empty, or ≤ 63 of the key shape.
    if !value.is_empty() && (value.len() > 63 || !key_re.is_match(value)) {
        return Err(format!("invalid value {value:?}"));
    }
    Ok(())
}

/// `parseFeatureFile` with `parseDirectives` (local.go:157-235): trimmed lines; `#` lines are
/// comments, `# +` ones directives (`expiry-time=<RFC3339>`, `no-feature`, `no-label`; anything
/// else is an error NFD logs); other lines `key[=value]`, value `true` when absent. Lines after
/// an expiry time in the past are dropped. Returns the labels, failing on any directive NFD would
/// reject and on any label `validate.Label` would reject.
fn nfd_parse(text: &str, now_unix: u64) -> Result<BTreeMap<String, String>, String> {
    // MaxFeatureFileSize (local.go:64): larger files are skipped whole.
    if text.len() > 65_536 {
        return Err("file over 64 KiB: NFD skips it".into());
    }
    let rfc3339 = regex::Regex::new(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)Z$").unwrap();
    // A file without a directive expires at once (local.go:187-191: ExpiryTime starts at now).
    let mut expiry: Option<u64> = None;
    let mut labels = BTreeMap::new();
    for l in text.lines() {
        let line = l.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(c) = line.strip_prefix('#') {
            if let Some(d) = line.strip_prefix("# +") {
                let (k, v) = d.split_once('=').map_or((d, None), |(k, v)| (k, Some(v)));
                match k {
                    "expiry-time" => {
                        let v = v.ok_or("invalid directive format")?.trim();
                        let m = rfc3339
                            .captures(v)
                            .ok_or_else(|| format!("failed to parse expiry-date {v:?}"))?;
                        let n = |i: usize| m[i].parse::<i64>().unwrap();
                        expiry = Some(unix_of(n(1), n(2), n(3), n(4), n(5), n(6)));
                    }
                    "no-feature" | "no-label" => {}
                    other => return Err(format!("unknown feature file directive {other:?}")),
                }
            }
            let _ = c;
            continue;
        }
        if expiry.is_none_or(|e| e < now_unix) {
            continue;
        }
        let (k, v) = line.split_once('=').unwrap_or((line, "true"));
        nfd_validate_label(k, v).map_err(|e| format!("invalid label {k:?}:{v:?} {e}"))?;
        labels.insert(k.to_string(), v.to_string());
    }
    Ok(labels)
}

/// Unix time of a UTC civil time (days from civil, the inverse of the exporter's).
fn unix_of(y: i64, m: i64, d: i64, h: i64, mi: i64, s: i64) -> u64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    (days * 86_400 + h * 3600 + mi * 60 + s) as u64
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_peerpath")
}

fn synth(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/synth/{name}.tar.gz"))
}

fn export(input: &Path, args: &[&str]) -> std::process::Output {
    Command::new(bin())
        .arg("export")
        .args(args)
        .arg("-i")
        .arg(input)
        .output()
        .unwrap()
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn nfd_reads_every_label_and_the_gdr_verdict() {
    for (name, gdr) in [
        ("hgx-h100", "true"),
        ("dgx-a100", "true"),
        ("vm-flat", "false"),
        ("misplaced-nic", "false"),
    ] {
        for prefix in [
            "peerpath.io",
            "feature.node.kubernetes.io",
            "gpu.feature.node.kubernetes.io",
        ] {
            let out = export(&synth(name), &["--format", "nfd", "--prefix", prefix]);
            assert!(
                out.status.success(),
                "{name} {prefix}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let text = String::from_utf8(out.stdout).unwrap();
            let labels = nfd_parse(&text, now()).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
            assert!(labels.len() >= 7, "{name}: {labels:?}");
            assert_eq!(labels[&format!("{prefix}/gdr-ready")], gdr, "{name}");
            // Expired an hour ago, NFD would drop every label.
            assert!(nfd_parse(&text, now() + 86_400 + 3600).unwrap().is_empty());
        }
    }
}

#[test]
fn nfd_reads_the_labels_of_an_amd_node() {
    // Issue 34's labels (xgmi-visible, xgmi-hives) pass NFD's own label rules too.
    let d = tempfile::tempdir().unwrap();
    let fx = d.path().join("mi300x.tar.gz");
    assert!(
        Command::new(bin())
            .args(["fixture", "mi300x-8gpu", "-o"])
            .arg(&fx)
            .status()
            .unwrap()
            .success()
    );
    let out = export(&fx, &["--format", "nfd"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let labels = nfd_parse(&text, now()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(labels["peerpath.io/gpu-count"], "8", "{labels:?}");
    assert_eq!(labels["peerpath.io/xgmi-visible"], "true", "{labels:?}");
    assert_eq!(labels["peerpath.io/xgmi-hives"], "1", "{labels:?}");
    assert_eq!(labels["peerpath.io/gdr-ready"], "true", "{labels:?}");
}

#[test]
fn nfd_denied_prefixes_are_refused_with_the_rule() {
    for prefix in ["node.kubernetes.io", "kubernetes.io", "Peerpath.io", "a..b"] {
        let out = export(&synth("hgx-h100"), &["--format", "nfd", "--prefix", prefix]);
        assert_eq!(out.status.code(), Some(2), "{prefix}");
        assert!(out.stdout.is_empty(), "{prefix}: nothing written");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains(prefix), "{prefix}: {e}");
        assert!(
            nfd_validate_label(&format!("{prefix}/gpu-count"), "8").is_err(),
            "NFD refuses {prefix} too"
        );
    }
}

/// The reader is not a copy of the exporter's check: on random keys they agree.
#[test]
fn exporter_label_check_agrees_with_nfd() {
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 2000,
        ..ProptestConfig::default()
    });
    let part = "[a-zA-Z0-9._-]{0,6}";
    let ns = prop_oneof![
        Just("feature.node.kubernetes.io".to_string()),
        Just("node.kubernetes.io".to_string()),
        "[a-z0-9.-]{0,12}".prop_map(|s| s),
        "[a-z0-9-]{1,5}".prop_map(|s| format!("{s}.feature.node.kubernetes.io")),
        "[a-z0-9-]{1,5}".prop_map(|s| format!("{s}.kubernetes.io")),
        "[a-z]{60,70}".prop_map(|s| format!("{s}.io")),
    ];
    runner
        .run(&(ns, part, part), |(ns, name, value)| {
            let ours = nfd::check_label(&ns, &name, &value).is_ok();
            let theirs = nfd_validate_label(&format!("{ns}/{name}"), &value).is_ok();
            prop_assert_eq!(ours, theirs, "{}/{}={}", ns, name, value);
            Ok(())
        })
        .unwrap();
}

#[test]
fn nfd_reader_rejects_what_nfd_rejects() {
    let t = now() + 3600;
    let exp = |s: &str| format!("# +expiry-time=2099-01-01T00:00:00Z\n{s}\n");
    assert!(nfd_parse(&exp("peerpath.io/a=b"), t).is_ok());
    assert!(nfd_parse(&exp("a=b"), t).is_err(), "unprefixed");
    assert!(
        nfd_parse(&exp("peerpath.io/a=0000:18:00.0"), t).is_err(),
        "colon in value"
    );
    assert!(nfd_parse(&exp("node.kubernetes.io/a=b"), t).is_err());
    assert!(
        nfd_parse("# +expiry=2099\npeerpath.io/a=b\n", t).is_err(),
        "unknown directive"
    );
    assert!(nfd_parse("# +expiry-time=tomorrow\n", t).is_err());
    assert_eq!(
        nfd_parse("peerpath.io/a=b\n", t).unwrap().len(),
        0,
        "no expiry directive: expired at once"
    );
}

/// `promtool check metrics` on what the binary writes, and the GDR gauge it reads.
#[test]
fn promtool_reads_every_export_and_the_gdr_verdict() {
    if Command::new("promtool").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "promtool missing under CI: .ci/run installs `prometheus`"
        );
        eprintln!("SKIPPED: promtool not installed (apt-get install prometheus)");
        return;
    }
    for (name, gdr) in [
        ("hgx-h100", 1),
        ("dgx-a100", 1),
        ("vm-flat", 0),
        ("misplaced-nic", 0),
    ] {
        let out = export(&synth(name), &["--format", "prom"]);
        assert!(out.status.success(), "{name}");
        let mut child = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(&out.stdout).unwrap();
        }
        let lint = child.wait_with_output().unwrap();
        assert!(
            lint.status.success() && lint.stdout.is_empty() && lint.stderr.is_empty(),
            "promtool on {name}: {}{}",
            String::from_utf8_lossy(&lint.stdout),
            String::from_utf8_lossy(&lint.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let want = format!("peerpath_gdr_ready {gdr}");
        assert!(text.lines().any(|l| l == want), "{name}: want {want}");
    }
}

/// `deploy/kubernetes/`, proven in the tools that read it: the DaemonSet passes Kubernetes'
/// own schemas (kubernetes-validate --strict, 1.34 and 1.37) and a copy with an unknown field
/// fails; the NodeFeatureRule passes NFD's CRD schema (`fixtures/nfd/nfd-api-crds.yaml`,
/// NFD's own file, unknown fields refused as the API server refuses them) and a copy with an
/// operator NFD does not have fails. The rule taints on the label the NFD export writes
/// (`gdr-ready=false` on the node whose GPU3 NIC sits on the other socket and on a PHB-only VM;
/// nothing on the clean HGX), and the DaemonSet writes that file where nfd-worker reads it and
/// tolerates the taint, so it keeps running to lift it.
#[test]
fn deploy_manifests_pass_the_schemas_and_taint_what_the_export_says() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ds = repo.join("deploy/kubernetes/daemonset.yaml");
    let rule = repo.join("deploy/kubernetes/nodefeaturerule.yaml");
    let ds_text = std::fs::read_to_string(&ds).unwrap();
    let rule_text = std::fs::read_to_string(&rule).unwrap();
    // The rule's taints, in order: (label value it matches, taint "key=value:effect").
    let mut taints: Vec<(String, String)> = Vec::new();
    let mut pending: Option<String> = None;
    let (mut key, mut value) = (String::new(), String::new());
    for l in rule_text.lines().map(str::trim) {
        if let Some(k) = l.strip_prefix("- key: ") {
            key = k.to_string();
        } else if let Some(v) = l.strip_prefix("value: ") {
            value = v.trim_matches('"').to_string();
        } else if let Some(e) = l.strip_prefix("effect: ") {
            pending = Some(format!("{key}={value}:{e}"));
        } else if let Some(m) = l.strip_prefix("peerpath.io/gdr-ready: {op: In, value: [\"") {
            let v = m.trim_end_matches("\"]}");
            taints.push((v.to_string(), pending.take().unwrap()));
        }
    }
    assert_eq!(
        taints,
        [
            (
                "false".into(),
                "peerpath.io/gdr-ready=false:NoSchedule".into()
            ),
            (
                "unknown".into(),
                "peerpath.io/gdr-ready=unknown:PreferNoSchedule".into()
            )
        ]
    );
    assert!(rule_text.contains("- feature: local.label\n"));
    for (name, want) in [
        (
            "misplaced-nic",
            Some("peerpath.io/gdr-ready=false:NoSchedule"),
        ),
        ("vm-flat", Some("peerpath.io/gdr-ready=false:NoSchedule")),
        ("hgx-h100", None),
    ] {
        let out = export(&synth(name), &["--format", "nfd"]);
        let labels = nfd_parse(&String::from_utf8(out.stdout).unwrap(), now()).unwrap();
        let v = &labels["peerpath.io/gdr-ready"];
        let got = taints.iter().find(|(m, _)| m == v).map(|(_, t)| t.as_str());
        assert_eq!(got, want, "{name}: gdr-ready={v}");
        // The taint's key is a label key NFD accepts.
        nfd_validate_label("peerpath.io/gdr-ready", v).unwrap();
    }
    assert!(ds_text.contains("- key: peerpath.io/gdr-ready\n          operator: Exists\n"));
    assert!(ds_text.contains("-o /etc/kubernetes/node-feature-discovery/features.d/peerpath"));
    assert!(ds_text.contains("mountPath: /etc/kubernetes/node-feature-discovery/features.d\n"));

    let dir = tempfile::tempdir().unwrap();
    if let Some(v) = common::validator() {
        for version in ["1.34.0", "1.37.0"] {
            let (pass, text) = common::validate(&v, version, std::slice::from_ref(&ds));
            assert!(
                pass && text.contains("passed"),
                "kubernetes {version}: {text}"
            );
        }
        let bad = dir.path().join("bad-ds.yaml");
        std::fs::write(
            &bad,
            ds_text.replace("      runtimeClassName:", "      runtimeClass:"),
        )
        .unwrap();
        let (pass, text) = common::validate(&v, "1.37.0", &[bad]);
        assert!(!pass, "an unknown field must fail: {text}");
    }
    let Some(py) = common::python_with_jsonschema() else {
        return;
    };
    let check = |file: &Path| {
        let o = Command::new(&py)
            .arg(repo.join("tests/k8s/validate_crd.py"))
            .arg(repo.join("fixtures/nfd/nfd-api-crds.yaml"))
            .arg(file)
            .output()
            .unwrap();
        (
            o.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        )
    };
    let (pass, text) = check(&rule);
    assert!(
        pass && text.contains("PASS") && text.contains("NodeFeatureRule/peerpath-gdr-readiness"),
        "{text}"
    );
    let bad = dir.path().join("bad-rule.yaml");
    std::fs::write(&bad, rule_text.replace("op: In", "op: Equals")).unwrap();
    let (pass, text) = check(&bad);
    assert!(!pass && text.contains("'Equals' is not one of"), "{text}");
}
