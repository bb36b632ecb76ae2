package testenv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Container images used when no address is configured and Docker answers.
const (
	redisImage    = "redis:7.4-alpine"
	dynamodbImage = "amazon/dynamodb-local:2.5.2"
)

const (
	dockerProbeTimeout = 3 * time.Second
	containerTimeout   = 3 * time.Minute
)

var (
	dockerOnce sync.Once
	dockerErr  error
)

// dockerAvailable reports, once per process, whether a Docker engine answers an Info
// request within dockerProbeTimeout. It returns nil when Docker is usable.
func dockerAvailable() error {
	dockerOnce.Do(func() { dockerErr = probeDocker() })
	return dockerErr
}

func probeDocker() (err error) {
	defer func() {
		// testcontainers has panicked on odd Docker configurations; treat that as
		// "no Docker" rather than crashing the test binary.
		if r := recover(); r != nil {
			err = fmt.Errorf("docker probe panicked: %v", r)
		}
	}()
	done := make(chan error, 1)
	go func() {
		p, err := testcontainers.NewDockerProvider()
		if err != nil {
			done <- err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), dockerProbeTimeout)
		defer cancel()
		done <- p.Health(ctx) // Health closes the provider.
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(dockerProbeTimeout + time.Second):
		return errors.New("docker probe timed out")
	}
}

// sharedContainer starts one container per process on first use and caches its
// endpoint (or the error). The container is removed by testcontainers' reaper when
// the process exits.
type sharedContainer struct {
	once sync.Once
	addr string
	err  error
	run  func(ctx context.Context) (string, error)
}

func (s *sharedContainer) get() (string, error) {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), containerTimeout)
		defer cancel()
		s.addr, s.err = s.run(ctx)
	})
	return s.addr, s.err
}

var redisContainer = &sharedContainer{run: func(ctx context.Context) (string, error) {
	c, err := testcontainers.Run(ctx, redisImage,
		testcontainers.WithExposedPorts("6379/tcp"),
		testcontainers.WithCmd("redis-server", "--save", "", "--appendonly", "no"),
		testcontainers.WithWaitStrategy(wait.ForLog("Ready to accept connections")),
	)
	if err != nil {
		return "", err
	}
	return c.PortEndpoint(ctx, "6379/tcp", "")
}}

var dynamodbContainer = &sharedContainer{run: func(ctx context.Context) (string, error) {
	c, err := testcontainers.Run(ctx, dynamodbImage,
		testcontainers.WithExposedPorts("8000/tcp"),
		testcontainers.WithCmd("-jar", "DynamoDBLocal.jar", "-inMemory", "-sharedDb"),
		testcontainers.WithWaitStrategy(wait.ForListeningPort("8000/tcp")),
	)
	if err != nil {
		return "", err
	}
	return c.PortEndpoint(ctx, "8000/tcp", "http")
}}
