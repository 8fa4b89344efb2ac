#pragma once
// Folders attn writes into (a run's --out, export's, explain's, sweep's) and a set of files
// written as a unit.
//
// check_output_folder refuses, before any work, a path that cannot become the folder: a file,
// a device, a dangling symbolic link, or a path under a file. NewFolder writes a set of files
// into a temporary folder beside the target and renames it into place on commit(), so a
// reader (or a second attn) sees no folder or the whole set, never part of it: `attn export`
// interrupted or failing leaves no model.safetensors without its model.py.
#include <string>

namespace attn::io {

// IoError "<what> <path>: <problem>" unless `path` is a folder, a symbolic link to one, or
// does not exist and can be made (the nearest existing path above it is a folder):
//   "--out /dev/null: a character device, not a folder"
//   "--out run: a symbolic link to 'gone', which does not exist"
//   "--out notes.txt/run: cannot make it: notes.txt is a file, not a folder"
void check_output_folder(const std::string& path, const std::string& what);

// The files of a new folder `path`, written as a unit:
//   NewFolder out(path, "--out");                  // checks path, makes the temporary folder
//   save_safetensors(out.file("model.safetensors"), ...);
//   write_file_atomically(out.file("model.py"), ...);
//   out.commit();                                  // renamed into place
// `path` must not exist, or be an empty folder (a link to one counts as that folder);
// IoError otherwise ("exists and is not empty"). The temporary folder is
// <parent>/.<name>.tmp-XXXXXX (mkdtemp; the parents of `path` are made); without commit() it
// is removed with its files. After kill -9 it may stay behind and can be deleted.
class NewFolder {
 public:
  NewFolder(const std::string& path, const std::string& what);
  ~NewFolder();
  NewFolder(const NewFolder&) = delete;
  NewFolder& operator=(const NewFolder&) = delete;

  // Where the file `name` goes until commit().
  std::string file(const std::string& name) const;
  // Syncs the folder, renames it to `path` (over an empty folder) and syncs the parent.
  // IoError on failure (nothing at `path` changed).
  void commit();

 private:
  std::string path_;    // the folder as given, for messages
  std::string target_;  // where it goes (a link to an empty folder followed)
  std::string temporary_;
  bool committed_ = false;
};

}  // namespace attn::io
