// Command pipestate is the on-call engineer's view of the state the pipestate
// library keeps in Redis, a Redis Cluster or DynamoDB: pipelines, runs with their
// versions and statuses, the event log (paged by cursor or followed live), run
// logs, reruns, replays, late arrivals, cascade markers, traits, cached readiness,
// who holds a lock or lease, and the values of the state stores (counters, HLL
// estimates, top-k items, Bloom filter answers), without writing Go or knowing the
// key schema.
//
//	go install github.com/pipestate/pipestate/cmd/pipestate@latest
//
// Reads:
//
//	pipestate pipelines list | pipelines show PIPELINE
//	pipestate runs PIPELINE [--status S] [--limit N]
//	pipestate run RUN
//	pipestate events PIPELINE [--since CURSOR] [--limit N] [--follow]
//	pipestate runlogs PIPELINE [--date D [--schedule S]] [--limit N]
//	pipestate reruns PIPELINE | --all
//	pipestate replays [PIPELINE [--date D [--schedule S]]]
//	pipestate late PIPELINE --date D [--schedule S]
//	pipestate markers PIPELINE
//	pipestate traits PIPELINE
//	pipestate readiness PIPELINE
//	pipestate lock show KEY | lock KEY
//	pipestate locks list [--match GLOB]
//	pipestate runs --all [--status S,S] [--older-than D]
//	pipestate run history RUN
//	pipestate state get KIND --entity E [--bucket B | --window W --from T --to T]
//
// Writes, which do nothing without --yes and print what they changed:
//
//	pipestate run fail RUN --version N --reason R --yes       (a compare-and-swap on version N)
//	pipestate lock release KEY --owner O --reason R --yes     (as owner O's ReleaseLock would)
//	pipestate lock release KEY --token T --reason R --yes     (as the lease's holder's ReleaseLease would)
//	pipestate admin create-tables --table T [--store-tables A,B] [--dedup-tables D] --yes
//
// Audited writes: run fail and lock release change provider state, so they need
// --reason (why; an incident tool should not let a destructive write go
// unexplained) and take --as (who; default $USER@host). Each appends an
// OPERATOR_WRITE event to a pipeline's log (run fail: the run's pipeline; lock
// release: --pipeline, or the one registered pipeline a part of the lock's key
// names, eval:orders:daily naming orders) whose Details hold the action,
// operator, reason, time and what changed (status and version before and after;
// the key and the owner, or the token and fence, released). The event cannot be
// one write with the change through the Provider interface, so the order is
// documented: run fail writes the same record into the run's metadata key
// pipestate.audit in the compare-and-swap that fails it, then appends the event
// (a crash between leaves the record on the run, where run history finds it);
// lock release releases, then appends. Before writing, each checks that its
// event will be accepted (the pipeline ID, the reason's size), so bad input
// writes nothing; an append that fails after the write is exit 1 with a message
// that says the write happened. admin create-tables creates tables, changes no
// state and is not audited.
//
// The CLI holds no lease, so its writes are unfenced (package fence): run fail
// succeeds on a run whatever fences it remembers, and leaves them as they were,
// so a holder that wakes up after an operator failed its run is refused only if
// a newer holder of its lease had written the run too. Release the holder's
// lease first (lock release) when the holder may still be running.
//
// A write restarts the retention of what it writes (see provider.Retention)
// with the library's default, provider.DefaultRetention (30 days): the run
// that run fail swaps and the audit event then expire 30 days after the
// write, whatever retention the deployment's own services use.
//
// And pipestate version (or --version): the module version the command was built
// as ("(devel)" for a build from a source tree without one), the VCS commit and
// its time when the build recorded them, and the Go version.
//
// 'pipestate help' lists the commands and 'pipestate COMMAND --help' shows a
// command's flags and an example. Flags and arguments may come in any order.
// Flags are spelled --name in the help and in every message (the parser also
// takes -name). A mistyped command, subcommand or flag is answered with the
// closest names ("unknown flag --limt (did you mean --limit?)").
//
// Reads never write: every command opens the provider read-only (the backend's
// WithReadOnly) unless it is a write given --yes, so that credentials that allow
// reads only (a Redis ACL user with the reader's rules, an IAM policy with the
// reader's actions: see the package docs of provider/redisprovider, provider/ddbprovider,
// state/redisstate and state/ddbstate) run every read command, state get included.
// A read-only provider never repairs what a crashed writer left in Redis's list
// indexes: it shows what the repair would have shown. A write with --yes needs
// the writer's rights; with a reader's it fails (NOPERM, AccessDeniedException)
// and changes nothing.
//
// # Connecting
//
// --redis ADDR (host:port or a redis:// URL), --redis-cluster A,B,C, or
// --dynamodb URL with --table T; --table T alone reaches DynamoDB through the AWS
// default config (environment, shared files, instance role). --prefix is the
// provider's Redis key prefix (default "pipestate"). Each has an environment
// variable, used when no flag of the command line names a backend:
// PIPESTATE_REDIS, PIPESTATE_REDIS_CLUSTER, PIPESTATE_DYNAMODB, PIPESTATE_TABLE,
// PIPESTATE_PREFIX. A Redis ACL user and its password go in the URL
// (redis://USER:PASSWORD@host:port, for a cluster
// redis://USER:PASSWORD@host:port?addr=host2:port2&addr=host3:port3) or, kept off
// the command line, in PIPESTATE_REDIS_USERNAME and PIPESTATE_REDIS_PASSWORD,
// used where the URL names none; the backend line never shows a password. A
// loopback --dynamodb endpoint (DynamoDB Local) gets dummy credentials unless
// AWS_ACCESS_KEY_ID is set, and region us-east-1 unless one is configured. For state get, --prefix and --table name the store, and the two
// variables are not read (they name the provider's).
//
// --timeout D (PIPESTATE_TIMEOUT; default 10s) bounds each call to the backend,
// connecting included: a backend that does not answer within D fails the command
// with exit 1 and a message naming it,
//
//	pipestate runs: redis 127.0.0.1:6379 did not answer within 10s (--timeout)
//
// whatever the client library's retries. On Redis the client's dial, read and
// write timeouts are D, and each command's context ends after D (a blocking
// XREAD after its block time plus D); on DynamoDB the HTTP client's dial, TLS
// handshake and response timeouts are D, and each operation's context, which
// covers the SDK's retries, their backoffs and the retrieval of credentials,
// ends after D. --follow is bounded per read, not as a whole: it follows until
// interrupted, and fails when one read gets no answer.
//
// # Output
//
// Aligned tables with times relative to now ("3m ago", "in 30m"), preceded by a
// line naming the backend; --json prints one JSON object per line instead (the
// library's types, e.g. types.RunState, with absolute times). Exit status: 0 found
// (or done), 1 error, 2 usage (bad flags or arguments, with a message saying how
// to fix them), 3 not found. PIPESTATE_NOW, an RFC 3339 time, fixes the clock of
// relative times and of the provider, for reproducible output.
//
// An error goes to stderr: a line "pipestate COMMAND: MESSAGE", then what to do
// or where the command looked. With --json (also on a command line that did not
// parse) it is one JSON object on stderr instead, stdout staying empty:
//
//	{"error":"no run \"r-9\"","code":3,"command":"run show","backend":"redis localhost:6379, prefix pipestate","chosenBy":["--redis"]}
//
// error is the message and code the exit status; command (the command that
// failed; absent for an unknown command), backend and chosenBy (what it connected
// to, and the flags and variables that chose it; absent before connecting or on
// a usage error), and hint (what to do next: the --help to read, a command you
// may have meant, a table to create) are left out when empty.
//
// events --since CURSOR and --follow --since CURSOR with a cursor older than what
// the backend keeps (retention dropped events after it: provider.ErrCursorExpired)
// exit 3, as the events after it are not found, and say so and, as the hint, how
// to go on:
//
//	pipestate events: cursor 1764293220000-0 is older than the events this backend keeps (retention): events after it may have been lost
//	start again with --since '' to read from the oldest kept event
//
// A follow that falls behind a log kept by count ends the same way, naming the
// cursor of the last event it printed.
//
// # Corrupt records
//
// A stored record that does not decode (a byte flipped, a value written by a
// newer version or by hand) never hides the others. A listing (runs, events,
// pipelines list, traits, ...) prints every good record as usual, names each
// one it skipped on stderr as it meets it, and exits 1:
//
//	pipestate runs: skipped: provider: corrupt run state r-0002 (redis key pipestate:{run:r-0002}): invalid character ...
//	pipestate runs: 1 corrupt record was skipped (named above); the others are shown
//
// so a script sees the failure while a person still sees the rest. With --json
// the good records go to stdout as ever, and stderr has one object per record
// skipped, then the error object (code 1):
//
//	{"skipped":"provider: corrupt run state r-0002 (...): ...","kind":"run_state","id":"r-0002","key":"...","command":"runs"}
//	{"error":"1 corrupt record was skipped (named above); the others are shown","code":1,"command":"runs",...}
//
// Showing a corrupt record (run RUN, pipelines show P, lock show K) fails with
// exit 1 and the same message. Like every message, these lines go through the
// stored-text rule below.
//
// lock show reads the key through provider.LockInspector, which every built-in
// backend implements: a lock's owner or a lease's token and fence, and its expiry.
// A key nothing holds exits 3, like anything else not found. --json adds "kind":
// "lock" or "lease" to the types.LockInfo.
//
// run fail on a run already FAILED changes nothing and says so, with exit 0,
// whatever version --version named.
//
// runs --all costs one ListPipelines and one ListRuns per pipeline (8 at once);
// locks list reads through provider.LockLister (a SCAN of every Redis master, a
// DynamoDB Scan of the table). Both are maintenance reads: the README has their
// cost measured at 1,000 pipelines.
//
// # Stored text
//
// Whoever may write a record (append an event, put a run log, take a lock) chooses
// what the command prints, so nothing it did not write itself reaches the
// terminal raw: values read from storage, error messages and arguments echoed
// back all go through one rule. A plain value is shown as it is: valid UTF-8 of
// printable characters (strconv.IsPrint: letters, marks, numbers, punctuation and
// symbols of any script, and the ASCII space) that neither starts with a double
// quote nor starts or ends with a space. Any other value is shown Go-quoted, as
// strconv.Quote quotes it, with control characters, DEL, C1 controls, format
// characters such as bidi overrides, line separators and other invisible runes
// escaped (\n, \t, \x1b, \x7f, \u009b, \u202e) and each byte that is not UTF-8 as
// \xff:
//
//	2h20m ago  RUN_STATE_CHANGED  r-0002  -  FAILED  "upstream timeout\nretrying in 5m"
//
// So a stored newline cannot split a table row or a followed event's line, and no
// escape sequence (clearing the screen, retitling the window, a hyperlink)
// reaches the terminal. A value built of several stored strings (a trait's
// settings, an error message naming a run) is quoted whole; a followed event's
// message is always quoted.
//
// A backslash is escaped, as \\, in a quoted value and only there: a plain value
// such as a Windows path shows its backslashes as they are. The rendering stays
// unambiguous all the same, because a quoted value starts with a double quote,
// which a plain one never does, and within the quotes every backslash starts an
// escape: the four characters \x1b stored are shown as \x1b, an ESC stored is
// shown as "\x1b", and the six characters "\x1b" stored are shown as "\"\\x1b\"".
//
// --json output is encoding/json's, which escapes control characters, and writes
// each byte of a string that is not UTF-8 as U+FFFD; the command escapes the rest
// of what is not printable (DEL, C1 controls, format characters) as \u escapes
// too, so each line decodes to the values encoding/json would give and holds
// printable text only; what encoding/json escaped is not escaped again.
package main
