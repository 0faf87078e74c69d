# The code tour on a real model: 12 questions about 4 packages of the Go
# standard library, answered by the model agent, which reads the files it
# needs. The questions come back to each package, so hearth's placement
# sends each to the conversation that already holds the file: no reading
# again, the prefix from the provider's cache. Needs ANTHROPIC_API_KEY;
# hearth.hcl, the default, runs offline on the gotour agent.
#
# Set workspace to your Go source tree, $(go env GOROOT)/src, then:
#
#   go run ./cmd/hearth run examples/code-tour/model.hcl

agent "tour" {
  bundled   = "model"
  workspace = "/usr/local/go/src" # $(go env GOROOT)/src
  pool {
    max_sessions = 4
  }
  model {
    model = "claude-sonnet-4-5"
    prices {
      input        = 3
      cached_input = 0.3
      cache_write  = 3.75
      output       = 15
    }
  }
}

pipeline "code-tour" {
  description = "12 questions about 4 packages of the Go standard library, answered by a model"
  agent       = "tour"
  budget      = 2.00 # dollars

  task "net-http-1" {
    prompt       = "What does Server.Serve in net/http/server.go do with each connection?"
    directories  = ["net/http"]
    technologies = ["go"]
  }
  task "encoding-json-1" {
    prompt       = "How does encoding/json/decode.go decode into an empty interface?"
    directories  = ["encoding/json"]
    technologies = ["go"]
  }
  task "go-ast-1" {
    prompt       = "Which node types does go/ast/ast.go define for statements?"
    directories  = ["go/ast"]
    technologies = ["go"]
  }
  task "text-template-1" {
    prompt       = "How does text/template/exec.go evaluate a pipeline?"
    directories  = ["text/template"]
    technologies = ["go"]
  }
  task "encoding-json-2" {
    prompt       = "In encoding/json/decode.go, what does UseNumber change?"
    directories  = ["encoding/json"]
    technologies = ["go"]
  }
  task "go-ast-2" {
    prompt       = "In go/ast/ast.go, what is a CommentGroup for?"
    directories  = ["go/ast"]
    technologies = ["go"]
  }
  task "text-template-2" {
    prompt       = "In text/template/exec.go, how are range loops over maps ordered?"
    directories  = ["text/template"]
    technologies = ["go"]
  }
  task "net-http-2" {
    prompt       = "In net/http/server.go, how does a handler's panic get recovered?"
    directories  = ["net/http"]
    technologies = ["go"]
  }
  task "go-ast-3" {
    prompt       = "How does go/ast/ast.go tell an exported name?"
    directories  = ["go/ast"]
    technologies = ["go"]
  }
  task "text-template-3" {
    prompt       = "What stops infinite recursion in text/template/exec.go?"
    directories  = ["text/template"]
    technologies = ["go"]
  }
  task "net-http-3" {
    prompt       = "How are request timeouts enforced in net/http/server.go?"
    directories  = ["net/http"]
    technologies = ["go"]
  }
  task "encoding-json-3" {
    prompt       = "How does encoding/json/decode.go report a type mismatch?"
    directories  = ["encoding/json"]
    technologies = ["go"]
  }
}
