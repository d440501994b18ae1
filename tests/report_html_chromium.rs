//! The HTML report opened in headless Chromium (Debian package `chromium`): the GPU selector,
//! preset from the address (`?gpu=GPU0`), recolours the endpoint boxes by their class from that
//! GPU, and the screenshot changes with it. Without Chromium the test fails when `CI` is set,
//! else it prints a note and passes.

use peerpath::analysis::audit::{self, AuditOptions};
use peerpath::analysis::classify::{Classifier, ClassifyOptions, classify_all};
use peerpath::model::topology::SourceInfo;
use peerpath::render::html::{self, HtmlInputs, ProbeDoc};
use peerpath::render::layout::{self, Inputs, label_colour};
use peerpath::sources::sysfs::{self, ScanOptions};
use peerpath::synth::{self, WriteOptions, layouts};
use resvg::tiny_skia::Pixmap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Some(dirs) = std::env::var_os("PATH") {
            for d in std::env::split_paths(&dirs) {
                let p = d.join(name);
                if p.is_file() {
                    return Some(p);
                }
            }
        }
    }
    None
}

/// Runs Chromium headless with `args` and the URL; returns stdout. Kills it after two minutes
/// (a hung browser must not hang the test suite).
fn run_chromium(bin: &Path, profile: &Path, args: &[String], url: &str) -> String {
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .arg(url);
    // Output goes to files: a dumped DOM is larger than a pipe's buffer.
    let out_path = profile.join("stdout");
    let err_path = profile.join("stderr");
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"));
    let mut child = cmd.spawn().expect("start chromium");
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait chromium") {
            break st;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("chromium did not finish within two minutes");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        status.success(),
        "chromium failed ({status}): {}",
        std::fs::read_to_string(&err_path).unwrap_or_default()
    );
    String::from_utf8_lossy(&std::fs::read(&out_path).expect("chromium stdout")).into_owned()
}

/// The attributes of the `<g>` tag carrying `data-ep="{ep}"` in a dumped DOM.
fn tag_of<'a>(dom: &'a str, ep: &str) -> &'a str {
    let needle = format!("data-ep=\"{ep}\"");
    dom.split("<g ")
        .map(|t| t.split('>').next().unwrap_or(""))
        .find(|t| t.contains(&needle))
        .unwrap_or_else(|| panic!("no box for {ep} in the DOM"))
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("{name}=\"");
    let i = tag.find(&key)? + key.len();
    tag[i..].split('"').next()
}

#[test]
fn gpu_selector_recolours_in_chromium() {
    let Some(bin) = chromium() else {
        if std::env::var_os("CI").is_some() {
            panic!("chromium not found on PATH (CI installs the Debian package chromium)");
        }
        eprintln!("note: chromium not found; the HTML report's browser test is skipped");
        return;
    };
    // DGX A100: GPU0's NIC0 is PXB, GPU4's NIC0 is SYS.
    let spec = layouts::dgx_a100();
    let root = synth::to_mem_root(&spec, &WriteOptions::default()).unwrap();
    let src = SourceInfo {
        kind: "synth".into(),
        path: "synth:dgx-a100".into(),
        limitations: vec![],
    };
    let pci_ids = Some(PathBuf::from("/usr/share/misc/pci.ids")).filter(|p| p.is_file());
    let topo = sysfs::scan(&root, src, &ScanOptions { pci_ids }).unwrap();
    let matrix = classify_all(&topo, &ClassifyOptions::default());
    let report = audit::run(&topo, &AuditOptions::default());
    let classifier = Classifier::new(&topo, &ClassifyOptions::default());
    let lay = layout::build(&Inputs {
        topo: &topo,
        classifier: &classifier,
        audit: &report,
        pair_labels: false,
    });
    let cells = classifier.pair_cells(&html::page_rows(classifier.endpoints()));
    let probe = ProbeDoc::parse(
        "probe.json",
        r#"{"schema":"peerpath.probe/2","fabric":"verbs","results":[{"gpu":{"bdf":"0000:07:00.0","cuda":0},"nic":{"fabric":"verbs","rdma":"mlx5_0","port":1},"memory":"cuda","direction":"host_to_gpu","op":"write","message_bytes":1048576,"gbytes_per_s":22.5,"verified":true,"verdict":"confirmed","expected_label":"PXB","reason":"at 95% of the host baseline"}]}"#,
    )
    .unwrap();
    let page = html::render(&HtmlInputs {
        layout: &lay,
        endpoints: classifier.endpoints(),
        notes: &matrix.notes,
        cells: &cells,
        audit: &report,
        probe: Some(&probe),
        cabling: None,
    });
    for bad in [
        "src=\"http",
        "href=\"http",
        "url(http",
        "<script src",
        "<link ",
    ] {
        assert!(!page.contains(bad), "external resource: {bad}");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.html");
    std::fs::write(&file, &page).unwrap();
    let url = |gpu: &str| format!("file://{}?gpu={gpu}", file.display());

    let nic0 = matrix.endpoint("NIC0").unwrap().bdf;
    let expect = |gpu: &str| {
        let g = matrix.endpoint(gpu).unwrap().bdf;
        matrix.pair(&g, &nic0).unwrap().label
    };
    let (l0, l4) = (expect("GPU0"), expect("GPU4"));
    assert_ne!(
        l0, l4,
        "the fixture must give NIC0 different classes from GPU0 and GPU4"
    );

    let started = Instant::now();
    let mut doms = Vec::new();
    for (gpu, want) in [("GPU0", l0), ("GPU4", l4)] {
        let profile = tempfile::tempdir().unwrap();
        let dom = run_chromium(&bin, profile.path(), &["--dump-dom".into()], &url(gpu));
        assert!(
            dom.contains(&format!("data-gpu=\"{gpu}\"")),
            "selector not preset to {gpu}"
        );
        let tag = tag_of(&dom, "NIC0");
        assert_eq!(
            attr(tag, "data-sel-label"),
            Some(want.to_string().as_str()),
            "{tag}"
        );
        assert_eq!(
            attr(tag, "data-sel-colour"),
            Some(label_colour(want)),
            "{tag}"
        );
        // The selected GPU's own box is marked, the rail pairs of other GPUs are dimmed.
        assert!(tag_of(&dom, gpu).contains("selected"));
        doms.push(dom);
    }
    // The pair matrix is drawn by the script from the packed pair data: one row per endpoint,
    // each cell with its class and, as a tooltip, the matrix's reason.
    let g0 = matrix.endpoint("GPU0").unwrap().bdf;
    let p0 = matrix.pair(&g0, &nic0).unwrap();
    let row = doms[0]
        .split("<tr ")
        .find(|t| t.starts_with("data-ep=\"GPU0\""))
        .expect("matrix row of GPU0");
    assert!(
        row.contains(&format!("title=\"{}\"", p0.reason))
            && row.contains(&format!(">{}</td>", p0.label)),
        "GPU0's row lacks the GPU0-NIC0 cell: {row}"
    );
    assert_eq!(
        doms[0].matches("<tr data-ep=").count(),
        matrix.endpoints.len(),
        "one matrix row per endpoint"
    );
    assert_ne!(
        attr(tag_of(&doms[0], "NIC0"), "data-sel-colour"),
        attr(tag_of(&doms[1], "NIC0"), "data-sel-colour")
    );
    // Without a preset nothing is recoloured.
    let profile = tempfile::tempdir().unwrap();
    let plain = run_chromium(
        &bin,
        profile.path(),
        &["--dump-dom".into()],
        &format!("file://{}", file.display()),
    );
    assert_eq!(attr(tag_of(&plain, "NIC0"), "data-sel-label"), None);
    assert!(plain.contains("id=\"probe\""), "probe results listed");

    // Screenshots for two GPUs: both show the page, and they differ.
    let mut shots = Vec::new();
    for gpu in ["GPU0", "GPU4"] {
        let profile = tempfile::tempdir().unwrap();
        let shot = dir.path().join(format!("shot-{gpu}.png"));
        run_chromium(
            &bin,
            profile.path(),
            &[
                format!("--screenshot={}", shot.display()),
                "--window-size=1700,1100".into(),
            ],
            &url(gpu),
        );
        let pm = Pixmap::load_png(&shot).expect("screenshot written");
        let ink = pm
            .pixels()
            .iter()
            .filter(|p| p.red() < 200 || p.green() < 200 || p.blue() < 200)
            .count();
        assert!(
            ink > 10_000,
            "screenshot of {gpu} is nearly blank ({ink} dark pixels)"
        );
        if std::env::var_os("PEERPATH_WRITE_DOCS").is_some() && gpu == "GPU4" {
            let out = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("docs/img/report-html-dgx-a100-gpu4.png");
            std::fs::create_dir_all(out.parent().unwrap()).unwrap();
            std::fs::copy(&shot, out).unwrap();
        }
        shots.push(pm);
    }
    let differ = shots[0]
        .pixels()
        .iter()
        .zip(shots[1].pixels())
        .filter(|(a, b)| a != b)
        .count();
    assert!(
        differ > 500,
        "selecting another GPU changed only {differ} pixels"
    );
    eprintln!(
        "chromium: 5 headless runs in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
