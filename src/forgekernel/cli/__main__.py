from forgekernel.cli import entry

entry()
