package redisstate_test

import (
	"testing"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
)

// TestMain fails the package when its tests leave tables or keys behind.
func TestMain(m *testing.M) { testenv.Main(m) }
