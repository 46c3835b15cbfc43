/* Host side of the old-format test: a plain shared library that objcopy gives a .nv_fatbin. */
int cudoctor_host_marker(void) { return 1; }
