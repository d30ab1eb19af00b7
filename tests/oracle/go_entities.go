// Go's own parser (go/ast) as the oracle for repoctx's Go extraction.
//
//	go run go_entities.go ROOT --out FILE.jsonl
//
// One JSON object per *.go file under ROOT (every folder, vendor/ and testdata/ included), in the format of
// ast_entities.py: {"file": relative path, "ok": parsed, "error": message, "entities": [[qualname, kind,
// start_line, end_line], ...]}. What counts as an entity, and its lines, is repoctx's contract for Go:
//   - functions ("function", qualname = name) and methods ("method", qualname = "T.M" for receiver T, *T,
//     T[P] or *T[P]), from the `func` keyword to the closing brace;
//   - types declared at package level ("interface" for an interface type, "class" for every other type),
//     their struct fields ("field", "T.f") and interface methods ("method", "I.m");
//   - package-level constants and variables ("variable"), the blank identifier excepted;
//   - a declaration starts at its keyword when it is not a parenthesised group, else at its spec; it ends
//     where its spec (or function) ends.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type record struct {
	File     string          `json:"file"`
	OK       bool            `json:"ok"`
	Error    string          `json:"error,omitempty"`
	Entities [][]interface{} `json:"entities"`
}

func receiverType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

func entities(fset *token.FileSet, f *ast.File) [][]interface{} {
	out := [][]interface{}{}
	// Physical lines: //line directives (generated code, testdata) do not move what a reader sees.
	line := func(p token.Pos) int { return fset.PositionFor(p, false).Line }
	add := func(q, kind string, start, end token.Pos) {
		out = append(out, []interface{}{q, kind, line(start), line(end - 1)})
	}
	for _, d := range f.Decls {
		switch decl := d.(type) {
		case *ast.FuncDecl:
			q, kind := decl.Name.Name, "function"
			if decl.Recv != nil && len(decl.Recv.List) > 0 {
				kind = "method"
				if t := receiverType(decl.Recv.List[0].Type); t != "" {
					q = t + "." + q
				}
			}
			add(q, kind, decl.Pos(), decl.End())
		case *ast.GenDecl:
			grouped := decl.Lparen.IsValid()
			for _, s := range decl.Specs {
				start := decl.Pos()
				if grouped {
					start = s.Pos()
				}
				switch spec := s.(type) {
				case *ast.TypeSpec:
					name := spec.Name.Name
					kind := "class"
					if it, ok := spec.Type.(*ast.InterfaceType); ok {
						kind = "interface"
						add(name, kind, start, spec.End())
						for _, m := range it.Methods.List {
							if _, isFunc := m.Type.(*ast.FuncType); isFunc {
								for _, n := range m.Names {
									add(name+"."+n.Name, "method", n.Pos(), m.End())
								}
							}
						}
						continue
					}
					add(name, kind, start, spec.End())
					if st, ok := spec.Type.(*ast.StructType); ok {
						for _, fld := range st.Fields.List {
							for _, n := range fld.Names {
								add(name+"."+n.Name, "field", fld.Pos(), fld.End())
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range spec.Names {
						if n.Name != "_" {
							add(n.Name, "variable", start, spec.End())
						}
					}
				}
			}
		}
	}
	return out
}

func main() {
	outPath := flag.String("out", "", "output JSONL file (default stdout)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: go_entities ROOT [--out FILE]")
		os.Exit(2)
	}
	root := flag.Arg(0)
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() && strings.HasSuffix(p, ".go") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sort.Strings(files)
	w := bufio.NewWriter(os.Stdout)
	if *outPath != "" {
		fh, err := os.Create(*outPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer fh.Close()
		w = bufio.NewWriter(fh)
	}
	enc := json.NewEncoder(w)
	for _, p := range files {
		rel, _ := filepath.Rel(root, p)
		rec := record{File: filepath.ToSlash(rel), Entities: [][]interface{}{}}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			rec.Error = err.Error()
		} else {
			rec.OK = true
			rec.Entities = entities(fset, f)
		}
		if err := enc.Encode(rec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
