"""DynamoDB's limits and the attribute names aioseq keeps for itself: constants only."""

#: DynamoDB's Number type holds at most 38 significant digits.
MAX_DIGITS = 38


#: The largest sequence number aioseq hands out: 10**38 - 1.
MAX_NUMBER = 10**MAX_DIGITS - 1


#: JavaScript's ``Number.MAX_SAFE_INTEGER`` (2**53 - 1): pass it as ``max_value=`` when the
#: numbers are read by JavaScript, which loses precision above it.
MAX_SAFE_INTEGER = 2**53 - 1


#: DynamoDB's limits on key values, in UTF-8 bytes: a partition key value (a counter key, an
#: item collection) and a sort key value.
MAX_PARTITION_KEY_BYTES = 2048


MAX_SORT_KEY_BYTES = 1024


#: What one partition takes on AWS, per second: write and read capacity units ("Best practices
#: for designing and using partition keys effectively"). All items with one partition key value
#: are in one partition.
PARTITION_WCU_PER_SEC = 1000
PARTITION_RCU_PER_SEC = 3000


#: DynamoDB's largest item (names and values), in bytes.
MAX_ITEM_BYTES = 400 * 1024


#: DynamoDB's longest name of a key attribute, in UTF-8 bytes.
MAX_KEY_ATTRIBUTE_NAME_BYTES = 255


#: The attributes aioseq keeps for itself, so that a lost answer is resolved by checking,
#: never by guessing (see `aioseq.strategies._recent_writes`):
#:
#: - ``aioseq_token`` (S) on every item the sort-key strategy stores: the idempotency token of
#:   the ``put`` call that stored it;
#: - ``aioseq_writes`` (N) on a counter item: how many conditional writes (optimistic and
#:   gapless strategies) have moved it;
#: - ``aioseq_tokens`` (L of S) on a counter item: the tokens of its last
#:   [`RECENT_WRITES`][aioseq.config.RECENT_WRITES] conditional writes, write ``w`` (counting
#:   from 0) in slot ``w % RECENT_WRITES``.
#: - ``aioseq_numbering`` (S) on a counter item: the [`Numbering`][aioseq.Numbering] its values are
#:   handed out under, recorded by the first write (``"stride=3 offset=2"``).
#: - ``aioseq_updated_at`` (S) on a counter item: when an operator's write (``set_counter``,
#:   ``ensure_at_least``) last moved it, ISO-8601 UTC (``"2025-01-31T12:00:00.000000+00:00"``).
#: - ``aioseq_turn`` (L of S) on a counter item, only once writers in several processes met on
#:   it: the queue of writers waiting to write, entries ``"<token>:<size>:<lease_ms>"`` (see
#:   `aioseq.strategies._turn`).
#: - ``aioseq_number`` (N), ``aioseq_request`` (S) and ``aioseq_expires`` (N) on an idempotency
#:   record (see `aioseq.strategies._idempotency`): the number a key's first call stored its
#:   item under, the SHA-256 of that item, and when the record expires (epoch seconds, the
#:   table's time to live attribute).
#: - ``aioseq_counter`` (S) on a counter item: what the counter is, recorded by the strategies'
#:   own writes: the strategy, and for one that stores items, where they are
#:   (``"atomic"``, ``"transactional items=sharded shards=32 number=sk prefix=orders"``: see
#:   [`CounterKind`][aioseq.layout.CounterKind]); what ``aioseq audit`` reads.
TOKEN_ATTRIBUTE = "aioseq_token"


WRITES_ATTRIBUTE = "aioseq_writes"


TOKENS_ATTRIBUTE = "aioseq_tokens"


NUMBERING_ATTRIBUTE = "aioseq_numbering"


UPDATED_AT_ATTRIBUTE = "aioseq_updated_at"


TURN_ATTRIBUTE = "aioseq_turn"


RECORDED_NUMBER_ATTRIBUTE = "aioseq_number"


REQUEST_HASH_ATTRIBUTE = "aioseq_request"


EXPIRES_ATTRIBUTE = "aioseq_expires"


COUNTER_ATTRIBUTE = "aioseq_counter"


RESERVED_ATTRIBUTES = frozenset(
    {
        TOKEN_ATTRIBUTE,
        WRITES_ATTRIBUTE,
        TOKENS_ATTRIBUTE,
        NUMBERING_ATTRIBUTE,
        UPDATED_AT_ATTRIBUTE,
        TURN_ATTRIBUTE,
        RECORDED_NUMBER_ATTRIBUTE,
        REQUEST_HASH_ATTRIBUTE,
        EXPIRES_ATTRIBUTE,
        COUNTER_ATTRIBUTE,
    }
)


#: How many conditional writes a counter item remembers the tokens of. A retry whose earlier
#: attempt's answer was lost can tell its own write from a rival's while fewer than this many
#: writes followed it. 32 tokens of 16 characters keep a counter item under 1 KB (1 WCU).
RECENT_WRITES = 32
