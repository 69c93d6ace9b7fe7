/*
 * qeo_state_peer: an independent Qeo peer in C on Eclipse Cyclone DDS 0.10 (Debian's
 * cyclonedds-dev), with DDS Security, that writes the Qeo state topic
 * org.qeo.sample.simplechat.ChatParticipant and removes its instances on command. The tests
 * use it to see how the qeo plugin reports each way an instance can go (QeoRemovalTests).
 *
 * Usage:
 *   qeo_state_peer [--domain N] [--libraries DIR] [--keep-unregistered] [CREDENTIALS]
 *
 *   CREDENTIALS   a device directory written by `switchyard qeo realm add-device` (ca.pem,
 *                 device.pem, device.key, governance.p7s, permissions.p7s, device.json and,
 *                 once a member was revoked, crl.pem). The participant turns on Cyclone's DDS
 *                 Security plugins with the property names the qeo plugin uses
 *                 (Plugins/qeo/Realm/DeviceCredentials.swift), and the domain comes from
 *                 device.json unless --domain says otherwise. Without CREDENTIALS the peer
 *                 joins as CYCLONEDDS_URI says: an open domain, or a secured one when that
 *                 configuration has a <Security> section; --domain is then needed (or the
 *                 configuration's default domain is used).
 *   --libraries   where libdds_security_{auth,ac,crypto}.so are (default: the first of
 *                 /usr/lib/<triplet>/libddsc0debian, /usr/lib/libddsc0debian, /usr/local/lib
 *                 that has them).
 *   --keep-unregistered
 *                 the writer does not dispose the instances it unregisters (writer data
 *                 lifecycle autodispose_unregistered_instances false; DDS's default, and the
 *                 qeo plugin's, is true: an unregister is then also a dispose).
 *
 * The writer is Qeo's state writer: topic org/qeo/sample/simplechat/ChatParticipant, type
 * org::qeo::sample::simplechat::ChatParticipant, reliable, transient-local, keep-last 1,
 * exclusive ownership.
 *
 * Standard input, one command a line (at most 255 bytes; names at most 127):
 *   write NAME STATE          dds_write {name: NAME, state: STATE}
 *   writedispose NAME STATE   dds_writedispose: that value and the disposal in one sample
 *   dispose NAME              dds_dispose of instance NAME
 *   unregister NAME           dds_unregister_instance of instance NAME
 *   quit                      deletes the participant (its writer leaves) and exits 0;
 *                             the end of standard input does the same
 * STATE is AVAILABLE, IDLE, BUSY or AWAY. After each command the peer prints `ok COMMAND`
 * (the command as read, words separated by one space) on standard output, flushed. It also
 * prints `matched` when the writer's first reader is matched (and again after every time the
 * count of matched readers fell to 0: `unmatched`), from a thread that waits on the writer's
 * PUBLICATION_MATCHED status condition — so a test waits for events, not for time.
 *
 * Errors go to standard error, each naming what failed (and Cyclone's return code); a command
 * that cannot be parsed or executed ends the peer with status 1, wrong arguments with status 2.
 *
 * Building (Cyclone's idlc makes the type support; -t leaves out the XTypes type information,
 * as the qeo plugin's own type program does, so the type matches by name):
 *
 *   SUPPORT=Tests/IntegrationTests/Support
 *   OUT=$(mktemp -d)
 *   idlc -t -o "$OUT" "$SUPPORT/ChatParticipant.idl"
 *   cc -std=c11 -Wall -Wextra -Werror -O2 -I "$OUT" -o "$OUT/qeo_state_peer" \
 *      "$SUPPORT/qeo_state_peer.c" "$OUT/ChatParticipant.c" -lddsc -pthread
 *
 * Running against a realm (see docs/qeo.md, "Secured realms"):
 *
 *   switchyard --plugins PLUGINS qeo realm init home --domain 160
 *   switchyard --plugins PLUGINS qeo realm add-user home alice
 *   switchyard --plugins PLUGINS qeo realm add-device home router --user 1   # home/devices/1
 *   switchyard --plugins PLUGINS qeo realm add-device home peer --user 1     # home/devices/2
 *   CYCLONEDDS_URI='<CycloneDDS><Domain><General><Interfaces><NetworkInterface name="lo" multicast="true"/></Interfaces></General></Domain></CycloneDDS>' \
 *     "$OUT/qeo_state_peer" home/devices/2
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dds/dds.h"
#include "ChatParticipant.h"

#define PROGRAM "qeo_state_peer"
#define TOPIC_NAME "org/qeo/sample/simplechat/ChatParticipant"
#define LINE_MAX_BYTES 256  /* a command line, its newline and the terminating NUL included */
#define NAME_MAX_BYTES 128  /* a name and its NUL */
#define PATH_MAX_BYTES 4096

typedef org_qeo_sample_simplechat_ChatParticipant ChatParticipant;

static pthread_mutex_t output_lock = PTHREAD_MUTEX_INITIALIZER;

/* One line on standard output, flushed at once (the tests read it as it comes). */
static void say(const char *format, ...)
{
  va_list arguments;
  pthread_mutex_lock(&output_lock);
  va_start(arguments, format);
  vfprintf(stdout, format, arguments);
  va_end(arguments);
  fputc('\n', stdout);
  fflush(stdout);
  pthread_mutex_unlock(&output_lock);
}

static void complain(const char *format, ...)
{
  va_list arguments;
  fputs(PROGRAM ": ", stderr);
  va_start(arguments, format);
  vfprintf(stderr, format, arguments);
  va_end(arguments);
  fputc('\n', stderr);
}

static void usage(void)
{
  complain("usage: " PROGRAM " [--domain N] [--libraries DIR] [--keep-unregistered] [CREDENTIALS]");
}

/* Whether `directory/file` can be read. */
static bool readable(const char *directory, const char *file)
{
  char path[PATH_MAX_BYTES];
  int length = snprintf(path, sizeof path, "%s/%s", directory, file);
  return length > 0 && (size_t)length < sizeof path && access(path, R_OK) == 0;
}

/* The domain in CREDENTIALS/device.json (`"domain" : 160`); false with a message when absent. */
static bool credentials_domain(const char *credentials, uint32_t *domain)
{
  char path[PATH_MAX_BYTES];
  int length = snprintf(path, sizeof path, "%s/device.json", credentials);
  if (length < 0 || (size_t)length >= sizeof path) {
    complain("%s: path too long", credentials);
    return false;
  }
  FILE *file = fopen(path, "r");
  if (file == NULL) {
    complain("%s: %s (`switchyard qeo realm add-device` writes it)", path, strerror(errno));
    return false;
  }
  char text[4096];
  size_t count = fread(text, 1, sizeof text - 1, file);
  fclose(file);
  text[count] = '\0';
  const char *key = strstr(text, "\"domain\"");
  const char *colon = key ? strchr(key + strlen("\"domain\""), ':') : NULL;
  if (colon == NULL) {
    complain("%s: no \"domain\"", path);
    return false;
  }
  char *end = NULL;
  errno = 0;
  unsigned long value = strtoul(colon + 1, &end, 10);
  if (errno != 0 || end == colon + 1 || value > 232) {
    complain("%s: \"domain\" is not a DDS domain id (0-232)", path);
    return false;
  }
  *domain = (uint32_t)value;
  return true;
}

/* Where Debian's libddsc keeps the DDS Security plugins. */
static const char *default_libraries(void)
{
  static const char *const candidates[] = {
    "/usr/lib/x86_64-linux-gnu/libddsc0debian", "/usr/lib/aarch64-linux-gnu/libddsc0debian",
    "/usr/lib/arm-linux-gnueabihf/libddsc0debian", "/usr/lib/libddsc0debian", "/usr/local/lib", "/usr/lib",
  };
  for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
    if (readable(candidates[i], "libdds_security_auth.so"))
      return candidates[i];
  }
  return NULL;
}

/* The participant QoS properties of DeviceCredentials.participantProperties(libraries:). */
static bool set_security(dds_qos_t *qos, const char *credentials, const char *libraries)
{
  static const char *const plugins[][3] = {
    {"auth", "auth", "authentication"}, {"crypto", "crypto", "crypto"}, {"access", "ac", "access_control"},
  };
  static const char *const files[][2] = {
    {"dds.sec.auth.identity_ca", "ca.pem"},
    {"dds.sec.auth.identity_certificate", "device.pem"},
    {"dds.sec.auth.private_key", "device.key"},
    {"dds.sec.access.permissions_ca", "ca.pem"},
    {"dds.sec.access.governance", "governance.p7s"},
    {"dds.sec.access.permissions", "permissions.p7s"},
  };
  char name[128], value[PATH_MAX_BYTES];
  for (size_t i = 0; i < sizeof plugins / sizeof plugins[0]; i++) {
    snprintf(name, sizeof name, "dds.sec.%s.library.path", plugins[i][0]);
    int length = snprintf(value, sizeof value, "%s/libdds_security_%s.so", libraries, plugins[i][1]);
    if (length < 0 || (size_t)length >= sizeof value) {
      complain("%s: path too long", libraries);
      return false;
    }
    dds_qset_prop(qos, name, value);
    snprintf(name, sizeof name, "dds.sec.%s.library.init", plugins[i][0]);
    snprintf(value, sizeof value, "init_%s", plugins[i][2]);
    dds_qset_prop(qos, name, value);
    snprintf(name, sizeof name, "dds.sec.%s.library.finalize", plugins[i][0]);
    snprintf(value, sizeof value, "finalize_%s", plugins[i][2]);
    dds_qset_prop(qos, name, value);
  }
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    if (!readable(credentials, files[i][1])) {
      complain("%s/%s is missing or unreadable", credentials, files[i][1]);
      return false;
    }
    int length = snprintf(value, sizeof value, "file:%s/%s", credentials, files[i][1]);
    if (length < 0 || (size_t)length >= sizeof value) {
      complain("%s: path too long", credentials);
      return false;
    }
    dds_qset_prop(qos, files[i][0], value);
  }
  /* The realm's revocation list, once a member was revoked. */
  if (readable(credentials, "crl.pem")) {
    snprintf(value, sizeof value, "file:%s/crl.pem", credentials);
    dds_qset_prop(qos, "org.eclipse.cyclonedds.sec.auth.crl", value);
  }
  return true;
}

/* The thread that says `matched` / `unmatched` as readers come and go. */
struct matching {
  dds_entity_t writer;
  dds_entity_t waitset;
  dds_entity_t stop; /* a guard condition: triggered at quit */
  pthread_t thread;
};

static void *watch_matches(void *argument)
{
  struct matching *matching = argument;
  int32_t announced = 0;
  for (;;) {
    dds_attach_t triggered[2];
    dds_return_t count = dds_waitset_wait(matching->waitset, triggered, 2, DDS_INFINITY);
    if (count < 0) {
      complain("waiting for matched readers: %s", dds_strretcode(count));
      return NULL;
    }
    bool stopping = false;
    if (dds_read_guardcondition(matching->stop, &stopping) == DDS_RETCODE_OK && stopping)
      return NULL;
    dds_publication_matched_status_t status;
    dds_return_t rc = dds_get_publication_matched_status(matching->writer, &status); /* resets the status */
    if (rc != DDS_RETCODE_OK) {
      complain("dds_get_publication_matched_status: %s", dds_strretcode(rc));
      return NULL;
    }
    if (announced == 0 && status.current_count > 0)
      say("matched");
    else if (announced > 0 && status.current_count == 0)
      say("unmatched");
    announced = status.current_count;
  }
}

/* Parses STATE; false when it is none of the enumerators. */
static bool parse_state(const char *word, org_qeo_sample_simplechat_ChatState *state)
{
  static const char *const names[] = {"AVAILABLE", "IDLE", "BUSY", "AWAY"};
  for (int i = 0; i < 4; i++) {
    if (strcmp(word, names[i]) == 0) {
      *state = (org_qeo_sample_simplechat_ChatState)i;
      return true;
    }
  }
  return false;
}

/* Executes one command line (without its newline); false after printing why on failure.
   Sets *quit for `quit`. */
static bool execute(dds_entity_t writer, char *line, bool *quit)
{
  char *words[4] = {NULL, NULL, NULL, NULL};
  int count = 0;
  char *save = NULL;
  for (char *word = strtok_r(line, " \t\r", &save); word != NULL; word = strtok_r(NULL, " \t\r", &save)) {
    if (count == 4) {
      complain("too many words in a command");
      return false;
    }
    words[count++] = word;
  }
  if (count == 0)
    return true; /* an empty line: nothing to do, nothing said */

  const char *command = words[0];
  bool needs_state = strcmp(command, "write") == 0 || strcmp(command, "writedispose") == 0;
  bool needs_name = needs_state || strcmp(command, "dispose") == 0 || strcmp(command, "unregister") == 0;
  if (strcmp(command, "quit") == 0 && count == 1) {
    *quit = true;
    return true;
  }
  if (!needs_name) {
    complain("unknown command '%s' (write NAME STATE, writedispose NAME STATE, dispose NAME, unregister NAME, quit)", command);
    return false;
  }
  if (count != (needs_state ? 3 : 2)) {
    complain("%s takes %s", command, needs_state ? "NAME STATE" : "NAME");
    return false;
  }
  if (strlen(words[1]) >= NAME_MAX_BYTES) {
    complain("name longer than %d bytes", NAME_MAX_BYTES - 1);
    return false;
  }
  ChatParticipant sample = {.name = words[1], .state = org_qeo_sample_simplechat_AVAILABLE};
  if (needs_state && !parse_state(words[2], &sample.state)) {
    complain("state '%s' is none of AVAILABLE, IDLE, BUSY, AWAY", words[2]);
    return false;
  }

  dds_return_t rc;
  if (strcmp(command, "write") == 0)
    rc = dds_write(writer, &sample);
  else if (strcmp(command, "writedispose") == 0)
    rc = dds_writedispose(writer, &sample);
  else if (strcmp(command, "dispose") == 0)
    rc = dds_dispose(writer, &sample);
  else
    rc = dds_unregister_instance(writer, &sample);
  if (rc != DDS_RETCODE_OK) {
    complain("%s %s: %s", command, words[1], dds_strretcode(rc));
    return false;
  }
  if (needs_state)
    say("ok %s %s %s", command, words[1], words[2]);
  else
    say("ok %s %s", command, words[1]);
  return true;
}

int main(int argc, char **argv)
{
  const char *credentials = NULL;
  const char *libraries = NULL;
  bool keep_unregistered = false;
  bool have_domain = false;
  uint32_t domain = DDS_DOMAIN_DEFAULT;

  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--domain") == 0 && i + 1 < argc) {
      char *end = NULL;
      errno = 0;
      unsigned long value = strtoul(argv[++i], &end, 10);
      if (errno != 0 || *end != '\0' || end == argv[i] || value > 232) {
        complain("--domain %s: not a DDS domain id (0-232)", argv[i]);
        return 2;
      }
      domain = (uint32_t)value;
      have_domain = true;
    } else if (strcmp(argv[i], "--libraries") == 0 && i + 1 < argc) {
      libraries = argv[++i];
    } else if (strcmp(argv[i], "--keep-unregistered") == 0) {
      keep_unregistered = true;
    } else if (argv[i][0] == '-' || credentials != NULL) {
      usage();
      return 2;
    } else {
      credentials = argv[i];
    }
  }
  if (credentials != NULL && !have_domain && !credentials_domain(credentials, &domain))
    return 2;
  if (credentials != NULL && libraries == NULL && (libraries = default_libraries()) == NULL) {
    complain("Cyclone DDS's security plugins (libdds_security_auth.so) are not installed; install libddsc0debian or pass --libraries");
    return 2;
  }

  dds_qos_t *qos = dds_create_qos();
  dds_qset_entity_name(qos, PROGRAM);
  if (credentials != NULL && !set_security(qos, credentials, libraries)) {
    dds_delete_qos(qos);
    return 2;
  }
  dds_entity_t participant = dds_create_participant(domain, qos, NULL);
  dds_delete_qos(qos);
  if (participant < 0) {
    complain("creating a participant on domain %" PRIu32 ": %s", domain, dds_strretcode(participant));
    return 1;
  }

  int status = 1;
  dds_entity_t topic = dds_create_topic(participant, &org_qeo_sample_simplechat_ChatParticipant_desc, TOPIC_NAME, NULL, NULL);
  if (topic < 0) {
    complain("creating topic " TOPIC_NAME ": %s", dds_strretcode(topic));
    goto done;
  }
  /* Qeo's state QoS (Plugins/qeo/DDS/DDSEntities.swift, DDSTopic.qos()). */
  qos = dds_create_qos();
  dds_qset_reliability(qos, DDS_RELIABILITY_RELIABLE, DDS_SECS(1));
  dds_qset_durability(qos, DDS_DURABILITY_TRANSIENT_LOCAL);
  dds_qset_history(qos, DDS_HISTORY_KEEP_LAST, 1);
  dds_qset_ownership(qos, DDS_OWNERSHIP_EXCLUSIVE);
  dds_qset_writer_data_lifecycle(qos, !keep_unregistered);
  dds_entity_t writer = dds_create_writer(participant, topic, qos, NULL);
  dds_delete_qos(qos);
  if (writer < 0) {
    complain("creating a writer for " TOPIC_NAME ": %s", dds_strretcode(writer));
    goto done;
  }

  struct matching matching = {.writer = writer};
  dds_return_t rc = dds_set_status_mask(writer, DDS_PUBLICATION_MATCHED_STATUS);
  if (rc != DDS_RETCODE_OK) {
    complain("dds_set_status_mask: %s", dds_strretcode(rc));
    goto done;
  }
  if ((matching.waitset = dds_create_waitset(participant)) < 0 || (matching.stop = dds_create_guardcondition(participant)) < 0) {
    complain("creating a waitset: %s", dds_strretcode(matching.waitset < 0 ? matching.waitset : matching.stop));
    goto done;
  }
  if ((rc = dds_waitset_attach(matching.waitset, writer, writer)) != DDS_RETCODE_OK
      || (rc = dds_waitset_attach(matching.waitset, matching.stop, matching.stop)) != DDS_RETCODE_OK) {
    complain("dds_waitset_attach: %s", dds_strretcode(rc));
    goto done;
  }
  if (pthread_create(&matching.thread, NULL, watch_matches, &matching) != 0) {
    complain("pthread_create: %s", strerror(errno));
    goto done;
  }

  char line[LINE_MAX_BYTES];
  bool quit = false, failed = false;
  while (!quit && !failed && fgets(line, sizeof line, stdin) != NULL) {
    size_t length = strlen(line);
    if (length > 0 && line[length - 1] == '\n') {
      line[length - 1] = '\0';
    } else if (!feof(stdin)) {
      complain("a command line longer than %d bytes", LINE_MAX_BYTES - 2);
      failed = true;
      break;
    }
    failed = !execute(writer, line, &quit);
  }
  if (ferror(stdin)) {
    complain("reading standard input: %s", strerror(errno));
    failed = true;
  }

  dds_set_guardcondition(matching.stop, true);
  pthread_join(matching.thread, NULL);
  /* The participant goes, and with it the writer: readers see it leave. */
  rc = dds_delete(participant);
  participant = 0;
  if (rc != DDS_RETCODE_OK) {
    complain("deleting the participant: %s", dds_strretcode(rc));
    return 1;
  }
  if (failed)
    return 1;
  say("ok quit");
  return 0;

done:
  if (participant > 0)
    dds_delete(participant);
  return status;
}
