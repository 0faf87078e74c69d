package config

import _ "embed"

// Sample is a commented config file with every setting and its default,
// printed by `hearth config sample`. A test keeps it valid.
//
//go:embed sample.hcl
var Sample []byte
