#pragma once
// Files at rest (docs/security.md, "Files at rest"). The journal holds every job's env (secrets included), the
// logs hold what jobs print, the admin token file a working credential: on a host an agent shares with the
// server (`allot demo`), the replicas must not read any of them. So the data directory is its owner's alone,
// every file in it is mode 0600 (or tighter) and every directory 0700, and a SQLite database named elsewhere
// (--database sqlite:PATH) is 0600 with its -wal, -shm and -journal files.
//
// One exception, for traversal only: when the job checkpoint directory lies inside the data directory (the
// default, <data>/checkpoints), the data directory is 0711, so that replicas running as another user reach their
// checkpoints; others can pass through it but not list it, and every file in it is 0600 all the same. The
// checkpoint directory itself belongs to the jobs and is left as the agents make it.
//
// An existing data directory or file with looser modes is tightened at start, and each one tightened is
// named in the log.
#include <string>

#include "core/model/result.h"

namespace allot::server {

struct DataFiles {
  std::string data_dir;
  std::string checkpoint_dir;  // absolute; may lie inside data_dir
  std::string sqlite_path;     // the database file when the store is SQLite, else empty
};

// Creates the data directory with its mode and tightens what is there already, before the store opens it.
// A new SQLite database file is created 0600 here (SQLite gives its -wal and -shm files the database's mode).
// Errors: the directory cannot be created or a mode cannot be set.
Status secure_data_files(const DataFiles& files);

// The mode the data directory gets: 0700, or 0711 when `checkpoint_dir` lies inside it.
unsigned data_dir_mode(const std::string& data_dir, const std::string& checkpoint_dir);

}  // namespace allot::server
