// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for name handling: UTF-8 <-> UTF-16 conversion (surrogate
 * pairs, lone surrogates, invalid sequences, lengths), the case-folded
 * compare through the recommended up-case table, the rules for new names
 * and trailing dots.  Included at the end of upcase.c, so that the static
 * helpers are reachable; the suite runs when the module is loaded into a
 * kernel built with KUnit.
 */
#include <kunit/test.h>

/* A superblock good enough for the conversions: UTF-8, no NLS table. */
static struct super_block *exfat_test_sb(struct kunit *test)
{
	struct super_block *sb = kunit_kzalloc(test, sizeof(*sb), GFP_KERNEL);
	struct exfat_sb_info *sbi = kunit_kzalloc(test, sizeof(*sbi),
						  GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, sb);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, sbi);
	sb->s_fs_info = sbi;
	return sb;
}

struct exfat_utf8_case {
	const char *desc;
	const char *in;		/* UTF-8 (or not) */
	int ret;		/* units, or a negative errno */
	u16 out[4];
	unsigned int maxlen;	/* 0: EXFAT_MAX_NAME_LEN */
};

static const struct exfat_utf8_case exfat_utf8_cases[] = {
	{ "ascii", "aB.", 3, { 'a', 'B', '.' } },
	{ "two bytes", "\xc3\xa9", 1, { 0x00e9 } },
	{ "three bytes", "\xe2\x82\xac", 1, { 0x20ac } },
	{ "four bytes: a pair", "\xf0\x9f\x98\x80", 2, { 0xd83d, 0xde00 } },
	{ "lone high surrogate", "\xed\xa0\x80", 1, { 0xd800 } },
	{ "lone low surrogate", "x\xed\xbf\xbf", 2, { 'x', 0xdfff } },
	{ "pair spelled as two lone halves", "\xed\xa0\xbd\xed\xb8\x80",
	  -EINVAL },
	{ "low before high is two lone halves", "\xed\xb8\x80\xed\xa0\xbd",
	  2, { 0xde00, 0xd83d } },
	{ "stray continuation byte", "a\x80", -EINVAL },
	{ "0xff", "\xff", -EINVAL },
	{ "truncated sequence", "\xc3", -EINVAL },
	{ "truncated four bytes", "\xf0\x9f\x98", -EINVAL },
	{ "overlong '/'", "\xc0\xaf", -EINVAL },
	{ "beyond U+10FFFF", "\xf4\x90\x80\x80", -EINVAL },
	{ "fits exactly", "abc", 3, { 'a', 'b', 'c' }, 3 },
	{ "one unit too many", "abcd", -ENAMETOOLONG, {}, 3 },
	{ "pair without room for its second half", "ab\xf0\x9f\x98\x80",
	  -ENAMETOOLONG, {}, 3 },
};

static void exfat_utf8_desc(const struct exfat_utf8_case *c, char *desc)
{
	strscpy(desc, c->desc, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(exfat_utf8, exfat_utf8_cases, exfat_utf8_desc);

static void exfat_utf8_to_utf16_test(struct kunit *test)
{
	const struct exfat_utf8_case *c = test->param_value;
	u16 uni[EXFAT_MAX_NAME_LEN];
	int i, ret;

	ret = exfat_utf8_to_utf16(c->in, strlen(c->in), uni,
				  c->maxlen ?: EXFAT_MAX_NAME_LEN);
	KUNIT_ASSERT_EQ(test, ret, c->ret);
	for (i = 0; i < ret; i++)
		KUNIT_EXPECT_EQ_MSG(test, uni[i], c->out[i], "unit %d", i);
}

/* Disk names go out as UTF-8 and come back as the same units. */
static void exfat_utf16_round_trip_test(struct kunit *test)
{
	static const u16 names[][5] = {
		{ 'a', 0x00e9, 0x20ac, 0 },
		{ 0xd83d, 0xde00, 'z', 0 },	/* a pair */
		{ 0xd800, 'q', 0 },		/* lone high */
		{ 'q', 0xdc00, 0 },		/* lone low */
		{ 0xdc00, 0xd800, 0 },		/* reversed halves */
		{ 0xd83d, 0 },			/* high at the end */
	};
	struct super_block *sb = exfat_test_sb(test);
	char buf[EXFAT_MAX_NLS_NAME];
	__le16 disk[5];
	u16 back[5];
	int i, j, len, n;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		for (len = 0; names[i][len]; len++)
			disk[len] = cpu_to_le16(names[i][len]);
		n = exfat_utf16_to_nls(sb, disk, len, buf, sizeof(buf));
		KUNIT_ASSERT_GT_MSG(test, n, 0, "name %d", i);
		KUNIT_EXPECT_EQ_MSG(test, strlen(buf), (size_t)n, "name %d", i);
		n = exfat_nls_to_utf16(sb, buf, n, back, ARRAY_SIZE(back));
		KUNIT_ASSERT_EQ_MSG(test, n, len, "name %d", i);
		for (j = 0; j < len; j++)
			KUNIT_EXPECT_EQ_MSG(test, back[j], names[i][j],
					    "name %d unit %d", i, j);
	}
}

static void exfat_utf16_to_utf8_test(struct kunit *test)
{
	struct super_block *sb = exfat_test_sb(test);
	const __le16 pair[] = { cpu_to_le16(0xd83d), cpu_to_le16(0xde00) };
	const __le16 nul[] = { cpu_to_le16('a'), 0, cpu_to_le16('b') };
	const __le16 lone[] = { cpu_to_le16(0xdbff) };
	char buf[8];

	KUNIT_EXPECT_EQ(test, exfat_utf16_to_nls(sb, pair, 2, buf, 8), 4);
	KUNIT_EXPECT_STREQ(test, buf, "\xf0\x9f\x98\x80");
	/* a U+0000 ends the name early */
	KUNIT_EXPECT_EQ(test, exfat_utf16_to_nls(sb, nul, 3, buf, 8), 1);
	KUNIT_EXPECT_STREQ(test, buf, "a");
	KUNIT_EXPECT_EQ(test, exfat_utf16_to_nls(sb, lone, 1, buf, 8), 3);
	KUNIT_EXPECT_STREQ(test, buf, "\xed\xaf\xbf");
	/* the NUL needs room too */
	KUNIT_EXPECT_EQ(test, exfat_utf16_to_nls(sb, pair, 2, buf, 4),
			-ENAMETOOLONG);
	KUNIT_EXPECT_EQ(test, exfat_utf16_to_nls(sb, pair, 2, buf, 5), 4);
}

/* Names compare through the volume's up-case table (§7.7). */
static void exfat_name_cmp_test(struct kunit *test)
{
	struct exfat_sb_info *sbi = kunit_kzalloc(test, sizeof(*sbi),
						  GFP_KERNEL);
	static const u16 abc[] = { 'a', 'b', 'c' };
	static const u16 e_acute[] = { 0x00e9 };
	static const u16 pair[] = { 0xd801, 0xdc28 };
	__le16 disk[3];

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, sbi);
	sbi->upcase = kunit_kcalloc(test, EXFAT_UPCASE_ENTRIES,
				    sizeof(*sbi->upcase), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, sbi->upcase);
	KUNIT_ASSERT_EQ(test, exfat_upcase_expand(exfat_default_upcase,
						  exfat_default_upcase_len,
						  sbi->upcase), 0);

	disk[0] = cpu_to_le16('A');
	disk[1] = cpu_to_le16('b');
	disk[2] = cpu_to_le16('C');
	KUNIT_EXPECT_EQ(test, exfat_name_cmp(sbi, abc, 3, disk, 3), 0);
	KUNIT_EXPECT_EQ(test, exfat_name_cmp(sbi, abc, 2, disk, 3), 1);
	disk[2] = cpu_to_le16('D');
	KUNIT_EXPECT_EQ(test, exfat_name_cmp(sbi, abc, 3, disk, 3), 1);

	disk[0] = cpu_to_le16(0x00c9);	/* É */
	KUNIT_EXPECT_EQ(test, exfat_name_cmp(sbi, e_acute, 1, disk, 1), 0);
	disk[0] = cpu_to_le16('E');
	KUNIT_EXPECT_EQ(test, exfat_name_cmp(sbi, e_acute, 1, disk, 1), 1);

	/* U+10428 and U+10400 are a case pair the table cannot express */
	disk[0] = cpu_to_le16(0xd801);
	disk[1] = cpu_to_le16(0xdc00);
	KUNIT_EXPECT_EQ(test, exfat_name_cmp(sbi, pair, 2, disk, 2), 1);
	disk[1] = cpu_to_le16(0xdc28);
	KUNIT_EXPECT_EQ(test, exfat_name_cmp(sbi, pair, 2, disk, 2), 0);
}

static void exfat_name_valid_test(struct kunit *test)
{
	static const char bad[] = "\"*/:<>?\\|";
	u16 name[EXFAT_MAX_NAME_LEN + 1];
	int i;

	name[0] = 'a';
	KUNIT_EXPECT_TRUE(test, exfat_name_valid(name, 1));
	KUNIT_EXPECT_FALSE(test, exfat_name_valid(name, 0));
	for (i = 0; bad[i]; i++) {
		name[1] = bad[i];
		KUNIT_EXPECT_FALSE_MSG(test, exfat_name_valid(name, 2),
				       "'%c'", bad[i]);
	}
	for (i = 0; i < 0x20; i++) {
		name[1] = i;
		KUNIT_EXPECT_FALSE_MSG(test, exfat_name_valid(name, 2),
				       "control %#x", i);
	}
	name[1] = 0xff0a;	/* full-width asterisk: Windows allows it */
	KUNIT_EXPECT_TRUE(test, exfat_name_valid(name, 2));
	name[1] = 0x7f;
	KUNIT_EXPECT_TRUE(test, exfat_name_valid(name, 2));

	name[0] = '.';
	name[1] = '.';
	name[2] = '.';
	KUNIT_EXPECT_FALSE(test, exfat_name_valid(name, 1));
	KUNIT_EXPECT_FALSE(test, exfat_name_valid(name, 2));
	KUNIT_EXPECT_TRUE(test, exfat_name_valid(name, 3));

	for (i = 0; i < ARRAY_SIZE(name); i++)
		name[i] = 'x';
	KUNIT_EXPECT_TRUE(test, exfat_name_valid(name, EXFAT_MAX_NAME_LEN));
	KUNIT_EXPECT_FALSE(test, exfat_name_valid(name,
						  EXFAT_MAX_NAME_LEN + 1));
}

static void exfat_strip_trailing_dots_test(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, exfat_strip_trailing_dots("a.b", 3), 3);
	KUNIT_EXPECT_EQ(test, exfat_strip_trailing_dots("ab..", 4), 2);
	KUNIT_EXPECT_EQ(test, exfat_strip_trailing_dots("...", 3), 0);
	KUNIT_EXPECT_EQ(test, exfat_strip_trailing_dots(".a", 2), 2);
}

static struct kunit_case exfat_name_test_cases[] = {
	KUNIT_CASE_PARAM(exfat_utf8_to_utf16_test, exfat_utf8_gen_params),
	KUNIT_CASE(exfat_utf16_to_utf8_test),
	KUNIT_CASE(exfat_utf16_round_trip_test),
	KUNIT_CASE(exfat_name_cmp_test),
	KUNIT_CASE(exfat_name_valid_test),
	KUNIT_CASE(exfat_strip_trailing_dots_test),
	{}
};

static struct kunit_suite exfat_name_test_suite = {
	.name = "exfat2_names",
	.test_cases = exfat_name_test_cases,
};

kunit_test_suite(exfat_name_test_suite);
