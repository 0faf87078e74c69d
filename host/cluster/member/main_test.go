package member_test

import (
	"testing"

	"github.com/hearth-dev/hearth/host/cluster/internal/clustertest"
)

// The test binary doubles as the scripted agent's plugin (clustertest).
func TestMain(m *testing.M) { clustertest.Main(m) }
