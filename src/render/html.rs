//! The self-contained HTML report: the picture as inline SVG, a GPU selector that recolours the
//! endpoints by their class from the chosen GPU, the pair matrix, the audit findings with their
//! evidence and remedies, and the probe results given with `--evidence`. No external resource,
//! no network fetch: one file that can be attached to a ticket.
//!
//! The selector can be preset from the address (`report.html?gpu=GPU3` or `#gpu=GPU3`); the
//! script then marks every endpoint box with `data-sel-label` and the colour of its class, and
//! the `<html>` element with `data-gpu`, which is what the headless-browser test reads.

use super::escape::script_json;
use super::layout::{Layout, label_colour, severity_colour};
use super::svg::{self, esc};
use crate::analysis::audit::Report;
use crate::analysis::cabling::Cabling;
use crate::analysis::classify::{Endpoint, Label, PairCells};
use crate::analysis::probe_report::ProbeReport;
use anyhow::Result;
use std::fmt::Write;

/// Probe results to show (a [`ProbeReport`], from `peerpath probe --format json`).
#[derive(Debug, Clone)]
pub struct ProbeDoc {
    /// Where it was read from.
    pub source: String,
    /// The report.
    pub report: ProbeReport,
}

impl ProbeDoc {
    /// Parses and checks a probe document ([`ProbeReport::from_json`]).
    pub fn parse(source: &str, text: &str) -> Result<Self> {
        Ok(ProbeDoc {
            source: source.to_string(),
            report: ProbeReport::from_json(source, text)?,
        })
    }
}

/// What the report shows besides the picture.
pub struct HtmlInputs<'a> {
    /// The picture's geometry.
    pub layout: &'a Layout,
    /// The matrix's endpoints, in matrix order.
    pub endpoints: &'a [Endpoint],
    /// Facts that limit the whole matrix.
    pub notes: &'a [String],
    /// The cells of the rows the page shows ([`page_rows`]).
    pub cells: &'a PairCells,
    /// The audit.
    pub audit: &'a Report,
    /// Probe results, if given.
    pub probe: Option<&'a ProbeDoc>,
    /// The rail cabling judged against the fabric's own map (`report --fabric-map`): the map's
    /// name and the report.
    pub cabling: Option<(&'a str, &'a Cabling)>,
}

const STYLE: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:16px;color:#111;background:#fff}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:22px 0 6px}
.verdict{display:inline-block;padding:2px 8px;border-radius:3px;color:#fff;font-weight:bold}
.pass{background:#1a9850}.fail{background:#c0142b}
.controls{margin:10px 0}
.picture{overflow:auto;border:1px solid #ccc}
table{border-collapse:collapse;font-size:12px} td,th{border:1px solid #ccc;padding:2px 5px;vertical-align:top}
th{background:#f0f0f0} td.l{text-align:center;font-weight:bold;font-family:monospace}
.sev{color:#fff;font-weight:bold;padding:0 4px;border-radius:2px}
code,.mono{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:11px}
.conn.dim{opacity:.12} .box.selected>rect.frame{stroke-width:3;stroke:#000}
.evidence{margin:0;padding-left:16px}
"#;

const SCRIPT: &str = r#"
(function(){
  var sel=document.getElementById('gpu-select');
  var N=EP.length, DEC={}, BYNAME={}, BYBDF={};
  for(var d=0;d<ALPHABET.length;d++){DEC[ALPHABET.charCodeAt(d)]=d;}
  for(var e=0;e<N;e++){
    BYNAME[EP[e][0]]=e;
    if(!(EP[e][1] in BYBDF)){BYBDF[EP[e][1]]=e;}
  }
  var G=GHB.length, ROW=null, ROWOF=-1;
  function code(str,s){
    var v=0;
    for(var k=0;k<W;k++){v=v*ALPHABET.length+DEC[str.charCodeAt(s+k)];}
    return v;
  }
  // Row `a` of the matrix, every column: near columns from NEAR[a] in order, the others from
  // the group table FAR (see PairCells::row in the source).
  function rowOf(a){
    if(ROWOF===a){return ROW;}
    var out=new Array(N), s=NEAR[a], k=0, ga=EP[a][4];
    for(var b=0;b<N;b++){
      var gb=EP[b][4];
      if(ga<0||gb<0||GHB[ga]===GHB[gb]){out[b]=CELL[code(s,k)]; k+=W;}
      else{var x=a<b?ga:gb, y=a<b?gb:ga; out[b]=CELL[code(FAR,(x*G+y)*W)];}
    }
    ROW=out; ROWOF=a;
    return out;
  }
  function cellOf(a,b){return rowOf(a)[b];}
  // The class of the box at address `bdf` from compute endpoint `g`: X for its own function.
  function boxLabel(g,bdf){
    if(g===undefined||bdf===null){return null;}
    if(EP[g][1]===bdf){return 'X';}
    var j=BYBDF[bdf];
    if(j===undefined){return null;}
    var c=cellOf(g,j);
    return c?c[0]:null;
  }
  function td(text,cls){var t=document.createElement('td'); if(cls){t.className=cls;} t.textContent=text; return t;}
  function row(a){
    var tr=document.createElement('tr'), th=document.createElement('th');
    tr.setAttribute('data-ep',EP[a][0]); th.textContent=EP[a][0]; tr.appendChild(th);
    var cs=rowOf(a);
    for(var b=0;b<N;b++){
      var c=cs[b], t=document.createElement('td');
      if(c){
        if(c[3]){t.title=c[3];}
        t.className='l'; t.setAttribute('style','background:'+c[1]+';color:'+c[2]); t.textContent=c[0];
      }
      tr.appendChild(t);
    }
    tr.appendChild(td(EP[a][2])); tr.appendChild(td(EP[a][1],'mono')); tr.appendChild(td(EP[a][3],'mono'));
    return tr;
  }
  var table=document.getElementById('matrix'), full=N<=FULL_MATRIX_MAX;
  function drawMatrix(name){
    var head=document.createElement('tr');
    head.appendChild(document.createElement('th'));
    for(var b=0;b<N;b++){var h=document.createElement('th'); h.textContent=EP[b][0]; head.appendChild(h);}
    ['NUMA','address','RDMA / net'].forEach(function(x){var h=document.createElement('th'); h.textContent=x; head.appendChild(h);});
    table.textContent='';
    table.appendChild(head);
    for(var a=0;a<N;a++){
      if(full||EP[a][0]===name){table.appendChild(row(a));}
    }
  }
  if(!full){
    document.getElementById('matrix-note').textContent=N+' endpoints: the table shows the selected GPU\'s row only (every pair: peerpath matrix).';
  }
  drawMatrix('');
  function apply(name){
    document.documentElement.setAttribute('data-gpu',name||'');
    if(!full){drawMatrix(name);}
    var g=name?BYNAME[name]:undefined;
    var boxes=document.querySelectorAll('#peerpath-picture g.box[data-ep]');
    for(var i=0;i<boxes.length;i++){
      var b=boxes[i], frame=b.querySelector('rect.frame'), bg=b.querySelector('rect.sel-bg'),
          tx=b.querySelector('text.sel-text'), lab=boxLabel(g,b.getAttribute('data-bdf'));
      b.classList.toggle('selected', name!=='' && b.getAttribute('data-ep')===name);
      if(!name||lab===null){
        b.removeAttribute('data-sel-label');
        frame.style.stroke=''; frame.style.strokeWidth='';
        if(bg){bg.style.fill='';} if(tx){tx.textContent='';}
        continue;
      }
      var c=COLOURS[lab.replace(/^NV[0-9]+$/,'NV')]||COLOURS['?'];
      b.setAttribute('data-sel-label',lab);
      b.setAttribute('data-sel-colour',c);
      if(lab!=='X'){frame.style.stroke=c; frame.style.strokeWidth='3';}
      if(bg){bg.style.fill=c;} if(tx){tx.textContent=lab; tx.style.fill=INK[lab]||'#ffffff';}
    }
    var conns=document.querySelectorAll('#peerpath-picture g.conn');
    for(var k=0;k<conns.length;k++){
      var c2=conns[k];
      c2.classList.toggle('dim', !!name && c2.getAttribute('data-from')!==name);
    }
    var rows=document.querySelectorAll('#matrix tr[data-ep]');
    for(var r=0;r<rows.length;r++){
      rows[r].style.outline=rows[r].getAttribute('data-ep')===name?'2px solid #000':'';
    }
  }
  function fromAddress(){
    var m=(location.search+'&'+location.hash.replace(/^#/,'?')).match(/[?&]gpu=([^&]+)/);
    return m?decodeURIComponent(m[1]):'';
  }
  var want=fromAddress();
  if(want){
    if(/^[0-9]+$/.test(want)){want='GPU'+want;}
    for(var o=0;o<sel.options.length;o++){if(sel.options[o].value===want){sel.value=want;}}
  }
  sel.addEventListener('change',function(){apply(sel.value);});
  apply(sel.value);
})();
"#;

fn sev_span(s: crate::analysis::audit::Severity) -> String {
    format!(
        r#"<span class="sev" style="background:{}">{}</span>"#,
        severity_colour(s),
        s.as_str()
    )
}

fn label_cell(l: Label) -> String {
    format!(
        r#"<td class="l" style="background:{};color:{}">{}</td>"#,
        if l == Label::X {
            "#ffffff"
        } else {
            label_colour(l)
        },
        if l == Label::X {
            "#000000"
        } else {
            svg::ink_on(l)
        },
        esc(&l.to_string())
    )
}

/// Characters of the packed class string: printable ASCII without `"`, `<` and `\\`, so the
/// string sits in a script as it is.
const ALPHABET: &[u8] =
    b"#$%&'()*+,-./0123456789:;=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_`abcdefghijklmnopqrstuvwxyz{|}~!";

/// Above this many endpoints the page draws only the selected GPU's row of the pair matrix
/// (the full table would be endpoints² cells, more than a browser lays out).
const FULL_MATRIX_MAX: usize = 512;

/// The rows of the pair matrix the page needs (one flag per endpoint): every row up to
/// 512 endpoints (`FULL_MATRIX_MAX`), above it the GPUs' and accelerators' rows (the table then shows
/// the selected one's row, and the boxes are coloured by it).
pub fn page_rows(endpoints: &[Endpoint]) -> Vec<bool> {
    let full = endpoints.len() <= FULL_MATRIX_MAX;
    endpoints
        .iter()
        .map(|e| full || e.kind.is_compute())
        .collect()
}

/// The pair data the page's script reads, once per node and not per box or cell: `EP`, every
/// endpoint of the matrix once (`[name, address, NUMA, "RDMA / net names", group]`); `CELL`,
/// each distinct cell (`[class, background, ink, tooltip]`, `null` for a pair the matrix does
/// not classify); `GHB`, each group's host bridge; `FAR`, the cell of each ordered pair of groups
/// (`W` characters of [`ALPHABET`] at `(x·groups + y)·W`); `NEAR`, per endpoint row, the cells
/// of its near columns in order (`null` for a row the page does not need). The script expands
/// them into cells as [`PairCells::row`] does.
fn pair_data(eps: &[Endpoint], pc: &PairCells) -> String {
    let cells: Vec<String> = pc
        .cells
        .iter()
        .map(|c| match c {
            None => "null".to_string(),
            Some((l, title)) => {
                let (bg, ink) = if *l == Label::X {
                    ("#ffffff", "#000000")
                } else {
                    (label_colour(*l), svg::ink_on(*l))
                };
                format!(
                    "[{},{},{},{}]",
                    script_json(&l.to_string()),
                    script_json(bg),
                    script_json(ink),
                    script_json(title)
                )
            }
        })
        .collect();
    let base = ALPHABET.len();
    let mut width = 1;
    while base.pow(width as u32) < cells.len() {
        width += 1;
    }
    let pack = |codes: &[u32]| -> String {
        let mut packed = String::with_capacity(codes.len() * width);
        let mut digits = vec![0u8; width];
        for &c in codes {
            let mut v = c as usize;
            for d in digits.iter_mut().rev() {
                *d = ALPHABET[v % base];
                v /= base;
            }
            packed.extend(digits.iter().map(|&d| d as char));
        }
        packed
    };
    let near: Vec<String> = pc
        .near
        .iter()
        .map(|r| match r {
            Some(codes) => format!("\"{}\"", pack(codes)),
            None => "null".into(),
        })
        .collect();
    let ghb: Vec<String> = pc.group_hb.iter().map(u32::to_string).collect();
    let eps: Vec<String> = eps
        .iter()
        .zip(&pc.group)
        .map(|(e, g)| {
            let names: Vec<&str> = e
                .rdma
                .iter()
                .chain(e.net.iter())
                .map(String::as_str)
                .collect();
            format!(
                "[{},{},{},{},{}]",
                script_json(&e.name),
                script_json(&e.bdf.to_string()),
                script_json(
                    &e.numa_node
                        .map(|v| v.to_string())
                        .unwrap_or_else(|| "?".into())
                ),
                script_json(&names.join(" ")),
                g.map(|g| g as i64).unwrap_or(-1)
            )
        })
        .collect();
    format!(
        "var ALPHABET={};\nvar FULL_MATRIX_MAX={FULL_MATRIX_MAX};\nvar EP=[{}];\nvar CELL=[{}];\nvar W={width};\nvar GHB=[{}];\nvar FAR=\"{}\";\nvar NEAR=[{}];\n",
        script_json(std::str::from_utf8(ALPHABET).unwrap_or_default()),
        eps.join(",\n"),
        cells.join(",\n"),
        ghb.join(","),
        pack(&pc.far),
        near.join(",\n"),
    )
}

/// Writes the HTML report: each section in page order.
pub fn render(i: &HtmlInputs) -> String {
    let mut o = String::new();
    head(&mut o, i);
    selector_and_picture(&mut o, i);
    matrix_section(&mut o, i);
    pairs_section(&mut o, i.layout);
    findings_section(&mut o, i.audit);
    probe_section(&mut o, i.probe);
    if let Some((name, c)) = i.cabling {
        cabling_section(&mut o, name, c);
    }
    script(&mut o, i);
    o
}

/// The document head, the title and header lines, and the audit's verdict line.
fn head(o: &mut String, i: &HtmlInputs) {
    let l = i.layout;
    let title = l
        .header
        .first()
        .map(|t| t.text.clone())
        .unwrap_or_else(|| "peerpath report".into());
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\" data-gpu=\"\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        esc(&title)
    );
    let _ = writeln!(o, "<h1>{}</h1>", esc(&title));
    for t in l.header.iter().skip(1) {
        let _ = writeln!(o, "<div>{}</div>", esc(&t.text));
    }
    let _ = writeln!(
        o,
        r#"<p>Audit: <span class="verdict {v}">{v}</span> — {} error, {} warning, {} unknown, {} info</p>"#,
        i.audit.counts.error,
        i.audit.counts.warning,
        i.audit.counts.unknown,
        i.audit.counts.info,
        v = esc(&i.audit.verdict)
    );
}

/// The GPU selector and the picture.
fn selector_and_picture(o: &mut String, i: &HtmlInputs) {
    o.push_str(r#"<div class="controls"><label for="gpu-select">Colour endpoints by their path class from: </label><select id="gpu-select"><option value="">(rail pairs only)</option>"#);
    for e in i.endpoints.iter().filter(|e| e.kind.is_compute()) {
        let _ = write!(
            o,
            r#"<option value="{n}">{n} {b}</option>"#,
            n = esc(&e.name),
            b = e.bdf
        );
    }
    o.push_str("</select> <span>hover a box, badge or line for details</span></div>\n");
    o.push_str(r#"<div class="picture">"#);
    o.push_str(&svg::render_for_page(i.layout));
    o.push_str("</div>\n");
}

/// The pair matrix's place (filled by the script) and the notes that limit it.
fn matrix_section(o: &mut String, i: &HtmlInputs) {
    // Matrix: filled by the script from the packed pair data (see [`pair_data`]).
    let _ = writeln!(
        o,
        "<h2>Pair matrix</h2>\n<p id=\"matrix-note\"></p>\n<table id=\"matrix\"></table>\n\
         <noscript><p>The pair matrix is drawn by the page's script; `peerpath matrix` prints it.</p></noscript>"
    );
    if !i.notes.is_empty() {
        o.push_str("<ul>");
        for n in i.notes {
            let _ = write!(o, "<li>{}</li>", esc(n));
        }
        o.push_str("</ul>\n");
    }
}

/// The rail pairs table.
fn pairs_section(o: &mut String, l: &Layout) {
    let _ = writeln!(o, "<h2>Rail pairs</h2>\n<p>{}</p>", esc(&l.pairs_source));
    o.push_str("<table id=\"pairs\"><tr><th>GPU</th><th>NIC</th><th>class</th><th>why, bottleneck</th></tr>\n");
    for c in &l.connectors {
        let why = c.title.lines().skip(1).collect::<Vec<_>>().join(" — ");
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td>{}<td>{}</td></tr>",
            esc(&c.from),
            esc(&c.to),
            label_cell(c.label),
            esc(&why)
        );
    }
    o.push_str("</table>\n");
}

/// The audit findings with their evidence and remedies.
fn findings_section(o: &mut String, audit: &Report) {
    let _ = writeln!(
        o,
        "<h2>Audit findings ({})</h2>\n<table id=\"findings\"><tr><th>severity</th><th>id</th><th>subject</th><th>summary</th><th>evidence</th><th>remedy</th></tr>",
        audit.findings.len()
    );
    for f in &audit.findings {
        let mut ev = String::from("<ul class=\"evidence\">");
        for e in &f.evidence {
            let _ = write!(
                ev,
                "<li><code>{}</code> = <code>{}</code></li>",
                esc(&e.path),
                esc(&e.value)
            );
        }
        ev.push_str("</ul>");
        let measured = f
            .measured
            .as_ref()
            .map(|m| format!("<br><i>measured: {}</i>", esc(m)))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td class=\"mono\">{}</td><td>{}{measured}</td><td>{ev}</td><td>{}</td></tr>",
            sev_span(f.severity),
            esc(f.id.as_str()),
            esc(&f.subject.to_string()),
            esc(&f.summary),
            esc(&f.remedy)
        );
    }
    o.push_str("</table>\n");
}

/// The probe results given with `--evidence`.
fn probe_section(o: &mut String, probe: Option<&ProbeDoc>) {
    o.push_str("<h2>Probe results</h2>\n");
    match probe {
        None => o.push_str("<p>No probe results given (<code>peerpath report --evidence probe.json</code> embeds the output of <code>peerpath probe --format json</code>).</p>\n"),
        Some(p) => {
            let r = &p.report;
            let fabric = if r.fabric.is_empty() { String::new() } else { format!(", fabric <code>{}</code>", esc(&r.fabric)) };
            let _ = writeln!(o, "<p>From <code>{}</code>{fabric}</p>", esc(&p.source));
            let cols = ["gpu", "nic", "memory", "direction", "op", "message_bytes", "gbytes_per_s", "verified", "verdict", "expected_label", "reason"];
            o.push_str("<table id=\"probe\"><tr>");
            for c in cols {
                let _ = write!(o, "<th>{c}</th>");
            }
            o.push_str("</tr>\n");
            for c in &r.results {
                let cells = [
                    c.gpu.as_ref().map(|g| g.to_string()).unwrap_or_default(),
                    c.nic.to_string(),
                    c.memory.as_str().to_string(),
                    c.direction.as_str().to_string(),
                    c.op.as_str().to_string(),
                    c.message_bytes.to_string(),
                    format!("{:.2}", c.gbytes_per_s),
                    c.verified.to_string(),
                    c.verdict.as_str().to_string(),
                    c.expected_label.map(|l| l.to_string()).unwrap_or_default(),
                    c.reason.clone(),
                ];
                o.push_str("<tr>");
                for v in cells {
                    let _ = write!(o, "<td>{}</td>", esc(&v));
                }
                o.push_str("</tr>\n");
            }
            o.push_str("</table>\n");
            for n in &r.notes {
                let _ = writeln!(o, "<p>{}</p>", esc(n));
            }
        }
    }
}

/// The rail cabling judged from `--fabric-map`: summary, picture, findings and limitations.
fn cabling_section(o: &mut String, name: &str, c: &Cabling) {
    o.push_str("<h2>Rail cabling</h2>\n");
    let _ = writeln!(
        o,
        "<p>From <code>{}</code> ({}): {} GPU nodes, {} adapter ports paired with the layout; {}</p>",
        esc(name),
        esc(&c.producer),
        c.hosts,
        c.adapters_matched,
        {
            let errors = c
                .findings
                .iter()
                .filter(|f| f.severity == crate::analysis::cabling::Severity::Error)
                .count();
            let warnings = c.findings.len() - errors;
            match (errors, warnings) {
                (0, 0) => "every adapter reaches a leaf of its own rail.".to_string(),
                (e, 0) => format!("{e} cabling error(s)."),
                (e, w) => format!("{e} cabling error(s), {w} warning(s)."),
            }
        }
    );
    o.push_str(r#"<div class="picture">"#);
    o.push_str(&super::cabling::render_svg(c));
    o.push_str("</div>\n");
    if !c.findings.is_empty() {
        o.push_str("<table id=\"cabling\"><tr><th>finding</th><th>evidence</th></tr>\n");
        for f in &c.findings {
            let _ = writeln!(
                o,
                "<tr><td>{}</td><td class=\"mono\">{}</td></tr>",
                esc(&super::cabling::finding_line(f)),
                esc(&f.evidence.join("; "))
            );
        }
        o.push_str("</table>\n");
    }
    for l in &c.limitations {
        let _ = writeln!(o, "<p>{}</p>", esc(l));
    }
}

/// The script, with the colour tables from the Rust side and the packed pair data.
fn script(o: &mut String, i: &HtmlInputs) {
    let labels = [
        Label::Nv(1),
        Label::Pix,
        Label::Pxb,
        Label::Phb,
        Label::Node,
        Label::Sys,
        Label::Unknown,
        Label::X,
    ];
    let colours: Vec<String> = labels
        .iter()
        .map(|l| {
            let key = match l {
                Label::Nv(_) => "NV".to_string(),
                other => other.to_string(),
            };
            format!("{key:?}:{:?}", label_colour(*l))
        })
        .collect();
    let inks: Vec<String> = labels
        .iter()
        .filter(|l| !matches!(l, Label::Nv(_)))
        .map(|l| format!("{:?}:{:?}", l.to_string(), svg::ink_on(*l)))
        .collect();
    let _ = write!(
        o,
        "<script>\nvar COLOURS={{{}}};\nvar INK={{{}}};\n{}{SCRIPT}</script>\n</body>\n</html>\n",
        colours.join(","),
        inks.join(","),
        pair_data(i.endpoints, i.cells)
    );
}
