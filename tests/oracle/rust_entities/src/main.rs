//! syn's parse of every *.rs file under ROOT, in the format of tests/oracle/ast_entities.py:
//!
//!     rust_entities ROOT --out FILE.jsonl
//!
//! One JSON object per file: {"file": relative path, "ok": parsed, "error": message, "entities": [[qualname,
//! kind, start_line, end_line], ...]}. What counts as an entity, and its lines, is repoctx's contract for Rust:
//!   - functions ("function"), `macro_rules!` macros ("function"), methods of `impl` blocks ("method",
//!     qualname "T.m" for the implementing type T, &T, path::T or T<P>);
//!   - structs, enums, unions and type aliases ("class"), their named fields and enum variants ("field",
//!     "S.f"); traits ("interface") and their methods ("method", "Tr.m");
//!   - constants and statics ("variable", `_` excepted);
//!   - the items of an inline `mod m { ... }` qualified by it ("m.f"), at any depth; items inside function
//!     bodies are not entities;
//!   - an item starts at its visibility or keyword (outer attributes and doc comments are not part of it) and
//!     ends at its last token.
use std::fs;
use std::io::Write;
use std::path::Path;

use proc_macro2::Span;
use syn::spanned::Spanned;

type Entities = Vec<serde_json::Value>;

fn lines(span: Span) -> (usize, usize) {
    (span.start().line, span.end().line)
}

fn push(out: &mut Entities, qual: String, kind: &str, span: Span) {
    let (a, b) = lines(span);
    out.push(serde_json::json!([qual, kind, a, b]));
}

fn type_name(t: &syn::Type) -> Option<String> {
    match t {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        syn::Type::Reference(r) => type_name(&r.elem),
        syn::Type::Ptr(p) => type_name(&p.elem),
        syn::Type::Paren(p) => type_name(&p.elem),
        syn::Type::Group(g) => type_name(&g.elem),
        _ => None,
    }
}

// The span of a node without its outer attributes (doc comments are attributes too).
macro_rules! bare_span {
    ($node:expr) => {{
        let mut n = $node.clone();
        n.attrs.clear();
        n.span()
    }};
}

fn fields(out: &mut Entities, owner: &str, fs: &syn::FieldsNamed) {
    for f in &fs.named {
        if let Some(id) = &f.ident {
            push(out, format!("{}.{}", owner, id), "field", bare_span!(f));
        }
    }
}

fn items(out: &mut Entities, prefix: &str, list: &[syn::Item]) {
    for item in list {
        match item {
            syn::Item::Fn(f) => push(out, format!("{}{}", prefix, f.sig.ident), "function", bare_span!(f)),
            syn::Item::Impl(i) => {
                let owner = match type_name(&i.self_ty) {
                    Some(o) => o,
                    None => continue,
                };
                for it in &i.items {
                    if let syn::ImplItem::Method(m) = it {
                        push(out, format!("{}{}.{}", prefix, owner, m.sig.ident), "method", bare_span!(m));
                    }
                }
            }
            syn::Item::Trait(t) => {
                let q = format!("{}{}", prefix, t.ident);
                push(out, q.clone(), "interface", bare_span!(t));
                for it in &t.items {
                    if let syn::TraitItem::Method(m) = it {
                        push(out, format!("{}.{}", q, m.sig.ident), "method", bare_span!(m));
                    }
                }
            }
            syn::Item::Struct(s) => {
                let q = format!("{}{}", prefix, s.ident);
                push(out, q.clone(), "class", bare_span!(s));
                if let syn::Fields::Named(named) = &s.fields {
                    fields(out, &q, named);
                }
            }
            syn::Item::Union(u) => {
                let q = format!("{}{}", prefix, u.ident);
                push(out, q.clone(), "class", bare_span!(u));
                fields(out, &q, &u.fields);
            }
            syn::Item::Enum(e) => {
                let q = format!("{}{}", prefix, e.ident);
                push(out, q.clone(), "class", bare_span!(e));
                for v in &e.variants {
                    push(out, format!("{}.{}", q, v.ident), "field", bare_span!(v));
                }
            }
            syn::Item::Type(t) => push(out, format!("{}{}", prefix, t.ident), "class", bare_span!(t)),
            syn::Item::Const(c) if c.ident != "_" => {
                push(out, format!("{}{}", prefix, c.ident), "variable", bare_span!(c))
            }
            syn::Item::Static(s) => push(out, format!("{}{}", prefix, s.ident), "variable", bare_span!(s)),
            syn::Item::Macro(m) if m.mac.path.is_ident("macro_rules") => {
                if let Some(id) = &m.ident {
                    push(out, format!("{}{}", prefix, id), "function", bare_span!(m));
                }
            }
            syn::Item::Mod(m) => {
                if let Some((_, content)) = &m.content {
                    items(out, &format!("{}{}.", prefix, m.ident), content);
                }
            }
            _ => {}
        }
    }
}

fn walk(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = match fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(|e| e.ok()).collect(),
        Err(_) => return,
    };
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let ft = match e.file_type() {
            Ok(t) => t,
            Err(_) => continue,
        };
        let p = e.path();
        if ft.is_dir() {
            walk(&p, files);
        } else if ft.is_file() && p.extension().map_or(false, |x| x == "rs") {
            files.push(p);
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut root = None;
    let mut out_path = None;
    let mut i = 1;
    while i < args.len() {
        if args[i] == "--out" && i + 1 < args.len() {
            out_path = Some(args[i + 1].clone());
            i += 2;
        } else {
            root = Some(args[i].clone());
            i += 1;
        }
    }
    let (root, out_path) = match (root, out_path) {
        (Some(r), Some(o)) => (r, o),
        _ => {
            eprintln!("usage: rust_entities ROOT --out FILE.jsonl");
            std::process::exit(2);
        }
    };
    let mut files = Vec::new();
    walk(Path::new(&root), &mut files);
    let mut out = std::io::BufWriter::new(fs::File::create(&out_path).expect("cannot write --out"));
    for p in files {
        let rel = p.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
        let rec = match fs::read_to_string(&p).map_err(|e| e.to_string()).and_then(|src| {
            syn::parse_file(&src).map_err(|e| format!("{} at line {}", e, e.span().start().line))
        }) {
            Ok(file) => {
                let mut ents = Entities::new();
                items(&mut ents, "", &file.items);
                serde_json::json!({"file": rel, "ok": true, "entities": ents})
            }
            Err(e) => serde_json::json!({"file": rel, "ok": false, "error": e, "entities": []}),
        };
        writeln!(out, "{}", rec).unwrap();
    }
}
