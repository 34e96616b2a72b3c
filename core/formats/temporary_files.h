// Temporary files of writes that never finished (docs/DESIGN.md §3.5 "Atomic writes"). A process
// killed between creating a write's temporary file and renaming it leaves a hidden
// `.attnscope-XXXXXX` of up to a workspace's size beside the file it was saving, for ever. So each
// process that writes keeps a journal of its temporary files in flight, in the state folder, under
// a lock it holds for its life; the next start of the app or the CLI removes the files listed by
// journals no live process holds, then those journals. Nothing else is ever removed: only regular
// files whose names start with the prefix the writer gives them, at the paths it recorded.
#pragma once
#include <string>

namespace attnscope {

// $XDG_STATE_HOME/attnscope, else ~/.local/state/attnscope (not created here).
std::string stateFolder();

// From now on this process records its temporary files in `folder`/temporary/PID.journal (made with
// the first one). Recording never fails a write: a folder that cannot be written records nothing.
void journalTemporaryFiles(const std::string& folder);

// Removes what journals in `folder`/temporary left by dead processes list; returns how many files
// were removed. Journals of live processes (their lock held) are left alone.
int removeAbandonedTemporaryFiles(const std::string& folder);

}  // namespace attnscope
