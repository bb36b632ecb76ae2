package redisprovider_test

import (
	"context"
	"fmt"
	"log/slog"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
)

// redisLog routes go-redis's own log lines (its connection pool's "failed to
// dial" and the like) to a slog.Logger, as warnings.
type redisLog struct{ log *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, fmt.Sprintf(format, v...), "library", "go-redis")
}

// go-redis logs through one logger for the whole process, apart from the
// provider's WithLogger: with a server down its pool prints a line per failed
// dial. Route it to your slog logger once, at start-up, or silence it.
func Example_goRedisLog() {
	goredis.SetLogger(redisLog{slog.Default()}) // route it, or:
	logging.Disable()                           // silence it (logging.Enable() undoes it)
}
