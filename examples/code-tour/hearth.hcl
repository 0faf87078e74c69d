# The code tour: questions about the Go standard library's own source,
# answered by the bundled gotour agent, which parses the packages it is
# asked about and keeps them in memory. The questions come in bursts per
# package, and the same packages come back later, so a session that has
# read a package answers much faster than a new one. Watch hearth place
# each question on the session that already knows the package.
#
#   go run ./cmd/hearth run examples/code-tour

agent "gotour" {
  bundled = "gotour"
  pool {
    max_sessions = 4
  }
}

pipeline "code-tour" {
  description = "48 questions about 12 packages of the Go standard library, in 4 clusters"
  agent       = "gotour"
  parallel    = 2

  task "net-http-summary" {
    prompt       = "summary net/http"
    directories  = ["net/http"]
    technologies = ["go"]
  }
  task "encoding-json-summary" {
    prompt       = "summary encoding/json"
    directories  = ["encoding/json"]
    technologies = ["go"]
  }
  task "go-ast-summary" {
    prompt       = "summary go/ast"
    directories  = ["go/ast"]
    technologies = ["go"]
  }
  task "text-template-summary" {
    prompt       = "summary text/template"
    directories  = ["text/template"]
    technologies = ["go"]
  }
  task "net-http-symbol" {
    prompt       = "symbol net/http Server"
    directories  = ["net/http"]
    technologies = ["go"]
  }
  task "encoding-json-symbol" {
    prompt       = "symbol encoding/json Decoder"
    directories  = ["encoding/json"]
    technologies = ["go"]
  }
  task "go-ast-symbol" {
    prompt       = "symbol go/ast File"
    directories  = ["go/ast"]
    technologies = ["go"]
  }
  task "text-template-symbol" {
    prompt       = "symbol text/template Template"
    directories  = ["text/template"]
    technologies = ["go"]
  }
  task "net-url-summary" {
    prompt       = "summary net/url"
    directories  = ["net/url"]
    technologies = ["go"]
  }
  task "encoding-xml-summary" {
    prompt       = "summary encoding/xml"
    directories  = ["encoding/xml"]
    technologies = ["go"]
  }
  task "go-parser-summary" {
    prompt       = "summary go/parser"
    directories  = ["go/parser"]
    technologies = ["go"]
  }
  task "text-template-parse-summary" {
    prompt       = "summary text/template/parse"
    directories  = ["text/template/parse"]
    technologies = ["go"]
  }
  task "net-url-symbol" {
    prompt       = "symbol net/url URL"
    directories  = ["net/url"]
    technologies = ["go"]
  }
  task "encoding-xml-symbol" {
    prompt       = "symbol encoding/xml Encoder"
    directories  = ["encoding/xml"]
    technologies = ["go"]
  }
  task "go-parser-symbol" {
    prompt       = "symbol go/parser ParseFile"
    directories  = ["go/parser"]
    technologies = ["go"]
  }
  task "text-template-parse-symbol" {
    prompt       = "symbol text/template/parse Tree"
    directories  = ["text/template/parse"]
    technologies = ["go"]
  }
  task "net-textproto-summary" {
    prompt       = "summary net/textproto"
    directories  = ["net/textproto"]
    technologies = ["go"]
  }
  task "encoding-csv-summary" {
    prompt       = "summary encoding/csv"
    directories  = ["encoding/csv"]
    technologies = ["go"]
  }
  task "go-printer-summary" {
    prompt       = "summary go/printer"
    directories  = ["go/printer"]
    technologies = ["go"]
  }
  task "text-tabwriter-summary" {
    prompt       = "summary text/tabwriter"
    directories  = ["text/tabwriter"]
    technologies = ["go"]
  }
  task "net-textproto-symbol" {
    prompt       = "symbol net/textproto Reader"
    directories  = ["net/textproto"]
    technologies = ["go"]
  }
  task "encoding-csv-symbol" {
    prompt       = "symbol encoding/csv Reader"
    directories  = ["encoding/csv"]
    technologies = ["go"]
  }
  task "go-printer-symbol" {
    prompt       = "symbol go/printer Config"
    directories  = ["go/printer"]
    technologies = ["go"]
  }
  task "text-tabwriter-symbol" {
    prompt       = "symbol text/tabwriter Writer"
    directories  = ["text/tabwriter"]
    technologies = ["go"]
  }
  task "go-ast-callers" {
    prompt       = "callers go/ast Walk"
    directories  = ["go/ast"]
    technologies = ["go"]
  }
  task "net-http-callers" {
    prompt       = "callers net/http Error"
    directories  = ["net/http"]
    technologies = ["go"]
  }
  task "text-template-callers" {
    prompt       = "callers text/template Execute"
    directories  = ["text/template"]
    technologies = ["go"]
  }
  task "encoding-json-callers" {
    prompt       = "callers encoding/json Marshal"
    directories  = ["encoding/json"]
    technologies = ["go"]
  }
  task "go-ast-imports" {
    prompt       = "imports go/ast"
    directories  = ["go/ast"]
    technologies = ["go"]
  }
  task "net-http-imports" {
    prompt       = "imports net/http"
    directories  = ["net/http"]
    technologies = ["go"]
  }
  task "text-template-imports" {
    prompt       = "imports text/template"
    directories  = ["text/template"]
    technologies = ["go"]
  }
  task "encoding-json-imports" {
    prompt       = "imports encoding/json"
    directories  = ["encoding/json"]
    technologies = ["go"]
  }
  task "go-parser-callers" {
    prompt       = "callers go/parser parseFile"
    directories  = ["go/parser"]
    technologies = ["go"]
  }
  task "net-url-callers" {
    prompt       = "callers net/url Parse"
    directories  = ["net/url"]
    technologies = ["go"]
  }
  task "text-template-parse-callers" {
    prompt       = "callers text/template/parse Parse"
    directories  = ["text/template/parse"]
    technologies = ["go"]
  }
  task "encoding-xml-callers" {
    prompt       = "callers encoding/xml NewDecoder"
    directories  = ["encoding/xml"]
    technologies = ["go"]
  }
  task "go-parser-imports" {
    prompt       = "imports go/parser"
    directories  = ["go/parser"]
    technologies = ["go"]
  }
  task "net-url-imports" {
    prompt       = "imports net/url"
    directories  = ["net/url"]
    technologies = ["go"]
  }
  task "text-template-parse-imports" {
    prompt       = "imports text/template/parse"
    directories  = ["text/template/parse"]
    technologies = ["go"]
  }
  task "encoding-xml-imports" {
    prompt       = "imports encoding/xml"
    directories  = ["encoding/xml"]
    technologies = ["go"]
  }
  task "go-printer-callers" {
    prompt       = "callers go/printer Fprint"
    directories  = ["go/printer"]
    technologies = ["go"]
  }
  task "net-textproto-callers" {
    prompt       = "callers net/textproto NewReader"
    directories  = ["net/textproto"]
    technologies = ["go"]
  }
  task "text-tabwriter-callers" {
    prompt       = "callers text/tabwriter write0"
    directories  = ["text/tabwriter"]
    technologies = ["go"]
  }
  task "encoding-csv-callers" {
    prompt       = "callers encoding/csv NewReader"
    directories  = ["encoding/csv"]
    technologies = ["go"]
  }
  task "go-printer-imports" {
    prompt       = "imports go/printer"
    directories  = ["go/printer"]
    technologies = ["go"]
  }
  task "net-textproto-imports" {
    prompt       = "imports net/textproto"
    directories  = ["net/textproto"]
    technologies = ["go"]
  }
  task "text-tabwriter-imports" {
    prompt       = "imports text/tabwriter"
    directories  = ["text/tabwriter"]
    technologies = ["go"]
  }
  task "encoding-csv-imports" {
    prompt       = "imports encoding/csv"
    directories  = ["encoding/csv"]
    technologies = ["go"]
  }
}
