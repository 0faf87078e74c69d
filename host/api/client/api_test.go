package client_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// clientPath is the package whose exported API is checked.
const clientPath = "github.com/hearth-dev/hearth/host/api/client"

// transportPaths are the packages whose types would tie a caller of the
// client to gRPC: a CLI that got one could not help importing them.
var transportPaths = []string{
	"google.golang.org/grpc",
	"google.golang.org/protobuf",
	"google.golang.org/genproto",
}

// leaks says whether a type of package path may not show in the client's
// API: gRPC's and protobuf's, and any internal package of the module
// (the daemon's messages and their codec), which a caller cannot even
// name.
func leaks(path string) bool {
	for _, bad := range transportPaths {
		if strings.HasPrefix(path, bad) {
			return true
		}
	}
	return strings.HasPrefix(path, "github.com/hearth-dev/hearth/") && strings.Contains(path, "/internal/")
}

// TestClientSpeaksNoGRPC holds "no gRPC type leaks into the CLI" where it
// could leak from: every exported name of the client (functions, methods,
// struct fields, variables, constants) is typed in the vocabulary, the
// standard library or the client's own types, never in gRPC's, protobuf's
// or an internal package's (the daemon's messages). The architecture test forbids cmd/ to import
// gRPC; this holds that it never needs to. It type-checks from the export
// data `go list -export` leaves in the build cache.
func TestClientSpeaksNoGRPC(t *testing.T) {
	pkg := importClient(t)
	seen := map[types.Type]bool{}
	var check func(where string, typ types.Type)
	check = func(where string, typ types.Type) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		switch u := typ.(type) {
		case *types.Named:
			if p := u.Obj().Pkg(); p != nil {
				if leaks(p.Path()) {
					t.Errorf("%s is typed %s, from %s: give callers a type of the vocabulary or the client", where, typ, p.Path())
				}
				if p.Path() != clientPath {
					// Another package's type: its own rules hold it
					// (the vocabulary links no gRPC, by TestArchitecture).
					for a := range u.TypeArgs().Types() {
						check(where, a)
					}
					return
				}
			}
			for m := range u.Methods() {
				if m.Exported() {
					check(where+"."+m.Name(), m.Type())
				}
			}
			check(where, u.Underlying())
		case *types.Alias:
			check(where, types.Unalias(u))
		case *types.Pointer:
			check(where, u.Elem())
		case *types.Slice:
			check(where, u.Elem())
		case *types.Array:
			check(where, u.Elem())
		case *types.Map:
			check(where, u.Key())
			check(where, u.Elem())
		case *types.Chan:
			check(where, u.Elem())
		case *types.Signature:
			for v := range u.Params().Variables() {
				check(where+" (parameter)", v.Type())
			}
			for v := range u.Results().Variables() {
				check(where+" (result)", v.Type())
			}
		case *types.Struct:
			for f := range u.Fields() {
				if f.Exported() {
					check(where+"."+f.Name(), f.Type())
				}
			}
		case *types.Interface:
			for m := range u.Methods() {
				if m.Exported() {
					check(where+"."+m.Name(), m.Type())
				}
			}
		}
	}
	scope := pkg.Scope()
	names := 0
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		names++
		check("client."+name, obj.Type())
		if tn, ok := obj.(*types.TypeName); ok {
			// The pointer's method set: methods on *T are the API too.
			ms := types.NewMethodSet(types.NewPointer(tn.Type()))
			for sel := range ms.Methods() {
				if sel.Obj().Exported() {
					check("client."+name+"."+sel.Obj().Name(), sel.Type())
				}
			}
		}
	}
	// A check that saw nothing would pass for any client.
	if names < 10 || scope.Lookup("Client") == nil {
		t.Fatalf("read %d exported names of %s, no Client among them: the export data is not the client's", names, clientPath)
	}
}

// importClient type-checks the client from the export data of the build
// cache, as the compiler would see it.
func importClient(t *testing.T) *types.Package {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Export", ".")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.Bytes())
	}
	exports := map[string]string{}
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list -export: %v", err)
		}
		exports[p.ImportPath] = p.Export
	}
	lookup := func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, errors.New("no export data for " + path)
		}
		return os.Open(file)
	}
	pkg, err := importer.ForCompiler(token.NewFileSet(), "gc", lookup).Import(clientPath)
	if err != nil {
		t.Fatalf("importing %s: %v", clientPath, err)
	}
	return pkg
}
