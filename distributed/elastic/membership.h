// The hosts an elastic job may run on (strata-elastic, issue 33): read from an
// Open MPI hostfile ("host slots=N" lines) or from a host-discovery command's
// output (Horovod's convention: "host:slots" lines, slots 1 when left out).
// Blank lines and # comments are skipped; a host named twice adds its slots.
#pragma once
#include <string>
#include <vector>

namespace strata::elastic {

struct Host {
  std::string name;
  int slots = 1;
};

// Throws ConfigError naming `origin` and the line for a line it cannot read.
std::vector<Host> parse_hostfile(const std::string& text, const std::string& origin);
std::vector<Host> parse_discovery(const std::string& text, const std::string& origin);

int total_slots(const std::vector<Host>& hosts);
// "node1 slots=2\nnode2 slots=1\n": the hostfile mpirun is given.
std::string to_hostfile(const std::vector<Host>& hosts);
// "node1:2,node2:1", for the console.
std::string describe(const std::vector<Host>& hosts);

}  // namespace strata::elastic
