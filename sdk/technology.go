package sdk

import (
	"path"
	"strings"
)

// extTechnologies is the table TechnologyOf reads: hearth's one list of
// the technologies it infers from file extensions. The host notes the
// technology of every file a session touched from it.
var extTechnologies = map[string]string{
	".go": "go", ".s": "asm", ".py": "python", ".ts": "typescript", ".tsx": "typescript",
	".js": "javascript", ".jsx": "javascript", ".rs": "rust", ".java": "java", ".kt": "kotlin",
	".rb": "ruby", ".c": "c", ".h": "c", ".cc": "c++", ".cpp": "c++", ".hpp": "c++",
	".cs": "csharp", ".swift": "swift", ".php": "php", ".sql": "sql", ".sh": "shell",
	".tf": "terraform", ".hcl": "hcl", ".proto": "protobuf", ".md": "markdown",
	".yaml": "yaml", ".yml": "yaml", ".json": "json", ".toml": "toml", ".html": "html", ".css": "css",
}

// TechnologyOf returns the technology a host infers from a file's
// extension, compared case-insensitively, or "" for an extension it does
// not know. The table:
//
//	.go go            .s asm            .py python        .ts .tsx typescript
//	.js .jsx javascript                 .rs rust          .java java
//	.kt kotlin        .rb ruby          .c .h c           .cc .cpp .hpp c++
//	.cs csharp        .swift swift      .php php          .sql sql
//	.sh shell         .tf terraform     .hcl hcl          .proto protobuf
//	.md markdown      .yaml .yml yaml   .json json        .toml toml
//	.html html        .css css
//
// A ToolUse's Technologies add to what this infers from its file paths;
// they never replace it.
func TechnologyOf(file string) string {
	return extTechnologies[strings.ToLower(path.Ext(file))]
}
