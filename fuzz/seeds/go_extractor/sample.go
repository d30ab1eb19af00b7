package main

import (
	"fmt"
	u "example.com/fix/pkg/util"
)

// Server serves.
type Server struct {
	util.Base
	name, addr string
	hits       int `json:"hits"`
}

type (
	Handler interface {
		Serve(x int) error
		fmt.Stringer
	}
	ID int
)

const Version = "1"

var (
	defaultName = "x"
	_           = 3
)

func (s *Server) Start() error {
	s.handle(1)
	n := u.Clamp(3, 4)
	fmt.Println(n, defaultName)
	return nil
}

func (s Server) handle(n int) {}

func main() {
	srv := &Server{name: "a"}
	srv.Start()
	newServer()
}
