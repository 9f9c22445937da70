/* Logging levels (fSetLoggingLevel, flogging) and error logging, read back from stderr. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static FILE *capture_file;
static int saved_stderr = -1;

static void capture_begin(void) {
  fflush(stderr);
  capture_file = tmpfile();
  saved_stderr = dup(STDERR_FILENO);
  if (capture_file != NULL) dup2(fileno(capture_file), STDERR_FILENO);
}

/* Ends the capture and returns what was written (into `out`). */
static void capture_end(char *out, size_t size) {
  fflush(stderr);
  dup2(saved_stderr, STDERR_FILENO);
  close(saved_stderr);
  out[0] = '\0';
  if (capture_file == NULL) return;
  rewind(capture_file);
  const size_t n = fread(out, 1, size - 1, capture_file);
  out[n] = '\0';
  fclose(capture_file);
  capture_file = NULL;
}

void test_logging(void) {
  char text[4096];

  /* Level 1: only errors. */
  fSetLoggingLevel(F_ERROR);
  capture_begin();
  flogging(F_ERROR, "an error line");
  flogging(F_WARNING, "a warning line");
  flogging(F_INFO, "an info line");
  CHECK(fneg(NULL) == NULL); /* failing calls log their error */
  capture_end(text, sizeof text);
  CHECK(strstr(text, "an error line") != NULL);
  CHECK(strstr(text, "a warning line") == NULL);
  CHECK(strstr(text, "an info line") == NULL);
  CHECK(strstr(text, "fneg: a is NULL") != NULL);

  /* Level 5: everything. */
  fSetLoggingLevel(F_DEBUG);
  capture_begin();
  flogging(F_WARNING, "a warning line");
  flogging(F_INFO, "an info line");
  flogging(F_VERBOSE, "a verbose line");
  flogging(F_DEBUG, "a debug line");
  capture_end(text, sizeof text);
  CHECK(strstr(text, "a warning line") != NULL);
  CHECK(strstr(text, "an info line") != NULL);
  CHECK(strstr(text, "a verbose line") != NULL);
  CHECK(strstr(text, "a debug line") != NULL);

  /* Level 2 and 3. */
  fSetLoggingLevel(F_WARNING);
  capture_begin();
  flogging(F_WARNING, "warning at 2");
  flogging(F_INFO, "info at 2");
  fSetLoggingLevel(F_INFO);
  flogging(F_INFO, "info at 3");
  flogging(F_VERBOSE, "verbose at 3");
  fSetLoggingLevel(F_VERBOSE);
  flogging(F_VERBOSE, "verbose at 4");
  flogging(F_DEBUG, "debug at 4");
  capture_end(text, sizeof text);
  CHECK(strstr(text, "warning at 2") != NULL);
  CHECK(strstr(text, "info at 2") == NULL);
  CHECK(strstr(text, "info at 3") != NULL);
  CHECK(strstr(text, "verbose at 3") == NULL);
  CHECK(strstr(text, "verbose at 4") != NULL);
  CHECK(strstr(text, "debug at 4") == NULL);

  /* Level 0: nothing, not even errors. */
  fSetLoggingLevel(F_NO_LOGGING);
  capture_begin();
  flogging(F_ERROR, "silent error");
  CHECK(fneg(NULL) == NULL);
  capture_end(text, sizeof text);
  CHECK(strcmp(text, "") == 0);

  /* A level outside 0-5 is an error and keeps the level. */
  fSetLoggingLevel((enum FLogType)6);
  CHECK_ERROR(1, INVALID_SELECT, "fSetLoggingLevel", "6");
  capture_begin();
  flogging(F_ERROR, "still silent");
  capture_end(text, sizeof text);
  CHECK(strcmp(text, "") == 0);
}
